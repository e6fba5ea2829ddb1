// The composer: words (Markdown), the @ picker, and the commands the door reads from a
// person's message (/add, /remove, /title, /archive, /unarchive, /leave, /wrong, /stop,
// wreply; docs/protocol.md).
import { useEffect, useRef, useState } from "preact/hooks";
import { suggestions, type Pick } from "../composer";
import type { Line } from "../protocol";
import { useStore } from "./hooks";

export type Draft = { mode: "new" } | { mode: "reply"; line: Line } | { mode: "edit"; line: Line };

export function Composer(props: { spaceId: string; title: string; draft: Draft; setDraft: (d: Draft) => void }) {
  const store = useStore();
  const [text, setText] = useState("");
  const [caret, setCaret] = useState(0);
  const [active, setActive] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const ref = useRef<HTMLTextAreaElement>(null);
  const { draft } = props;

  useEffect(() => {
    if (draft.mode === "edit") setText(draft.line.text ?? "");
    if (draft.mode !== "new") ref.current?.focus();
  }, [draft]);

  const room = store.rooms.get(props.spaceId);
  const people = (room?.sheet?.members ?? [])
    .filter((m) => m.participant_id !== store.me?.id)
    .map((m) => ({ name: m.name ?? store.nameOf(m.participant_id), kind: m.kind ?? "" }));
  const before = text.slice(0, caret);
  const offer = suggestions(before, people);

  const choose = (pick: Pick) => {
    if (!offer) return;
    const next = text.slice(0, offer.from) + pick.insert + text.slice(caret);
    setText(next);
    const pos = offer.from + pick.insert.length;
    setCaret(pos);
    setActive(0);
    requestAnimationFrame(() => {
      ref.current?.focus();
      ref.current?.setSelectionRange(pos, pos);
    });
  };

  const submit = async () => {
    const words = text.trim();
    if (!words) return;
    setError(null);
    setText("");
    setCaret(0);
    const d = draft;
    props.setDraft({ mode: "new" });
    try {
      if (d.mode === "edit") {
        await store.send({ type: "message.edited", space_id: props.spaceId, message_id: d.line.id, text: words });
      } else {
        await store.say(props.spaceId, words, d.mode === "reply" ? d.line.id : null);
      }
    } catch (err) {
      setError((err as Error).message);
      if (d.mode === "edit" || words.startsWith("/") || /^wreply\b/i.test(words)) setText(words);
    }
  };

  const listId = `picker-${props.spaceId}`;
  return (
    <form
      class="composer"
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      {draft.mode !== "new" && (
        <div class="draft-bar">
          {draft.mode === "reply" ? `Replying to ${store.nameOf(draft.line.author_id)}: ${(draft.line.text ?? "").slice(0, 60)}` : "Editing your message"}
          <button
            type="button"
            class="link"
            onClick={() => {
              if (draft.mode === "edit") setText("");
              props.setDraft({ mode: "new" });
            }}
          >
            Cancel
          </button>
        </div>
      )}
      {offer && (
        <ul class="picker" role="listbox" id={listId} aria-label="Suggestions">
          {offer.picks.map((p, i) => (
            <li
              key={p.insert}
              id={`${listId}-${i}`}
              role="option"
              aria-selected={i === active}
              class={i === active ? "active" : ""}
              onMouseDown={(e) => {
                e.preventDefault();
                choose(p);
              }}
            >
              <strong>{p.label}</strong> <span class="muted small">{p.hint}</span>
            </li>
          ))}
        </ul>
      )}
      {error && (
        <p class="error small" role="alert">
          {error}
        </p>
      )}
      <div class="compose-row">
        <label for={`composer-${props.spaceId}`} class="sr-only">
          Message {props.title}
        </label>
        <textarea
          id={`composer-${props.spaceId}`}
          ref={ref}
          rows={1}
          placeholder={`Message ${props.title}`}
          value={text}
          aria-controls={offer ? listId : undefined}
          aria-autocomplete="list"
          aria-activedescendant={offer ? `${listId}-${active}` : undefined}
          data-testid="composer"
          onInput={(e) => {
            setText(e.currentTarget.value);
            setCaret(e.currentTarget.selectionStart ?? e.currentTarget.value.length);
            setActive(0);
          }}
          onKeyUp={(e) => setCaret(e.currentTarget.selectionStart ?? 0)}
          onClick={(e) => setCaret(e.currentTarget.selectionStart ?? 0)}
          onKeyDown={(e) => {
            if (offer) {
              if (e.key === "ArrowDown") {
                e.preventDefault();
                setActive((active + 1) % offer.picks.length);
                return;
              }
              if (e.key === "ArrowUp") {
                e.preventDefault();
                setActive((active - 1 + offer.picks.length) % offer.picks.length);
                return;
              }
              if (e.key === "Tab" || (e.key === "Enter" && !e.shiftKey && offer.picks[active])) {
                e.preventDefault();
                choose(offer.picks[active]!);
                return;
              }
            }
            if (e.key === "Escape" && draft.mode !== "new") {
              props.setDraft({ mode: "new" });
              return;
            }
            if (e.key === "Enter" && !e.shiftKey) {
              e.preventDefault();
              void submit();
            }
          }}
        />
        <button type="submit" class="primary" disabled={!text.trim()}>
          {draft.mode === "edit" ? "Save" : "Send"}
        </button>
      </div>
    </form>
  );
}
