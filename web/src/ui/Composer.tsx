// The composer: words (Markdown), the @ picker, and the commands the door reads from a
// person's message (/add, /remove, /title, /archive, /unarchive, /leave, /wrong, /stop,
// wreply; docs/protocol.md); files, where the gateway takes them (docs/product/messages.md,
// Attachments); and who the message is for, in a room with several harnesses
// (docs/product/spaces.md, Several harnesses and people in one space).
import { useEffect, useRef, useState } from "preact/hooks";
import { destination, harnessesOf, suggestions, type Pick } from "../composer";
import { kindWords } from "../agents";
import { kindOf, overCap, sizeWords, type FileKind, type Uploaded } from "../files";
import type { Line } from "../protocol";
import { Face } from "./Face";
import { useStore } from "./hooks";
import { startRecording, type Recorder } from "./record";

/** A file picked for the next message: going up, up, or refused with the server's sentence. */
interface Chosen {
  id: number;
  name: string;
  size: number;
  kind: FileKind;
  sent: number;
  uploaded?: Uploaded;
  error?: string;
  abort?: () => void;
}

let chosenId = 0;

export type Draft = { mode: "new" } | { mode: "reply"; line: Line } | { mode: "edit"; line: Line };

/** `onArchive` asks first (the room's Archive sheet) when /archive is typed; without it the
 * command goes to the door, as it does wherever the menu offers no Archive (a harness's
 * home, a guest's room, a locked room), and the door says why it refuses. */
export function Composer(props: { spaceId: string; title: string; draft: Draft; setDraft: (d: Draft) => void; onArchive?: (() => void) | undefined }) {
  const store = useStore();
  const [text, setText] = useState("");
  const [caret, setCaret] = useState(0);
  const [active, setActive] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const [chosen, setChosen] = useState<Chosen[]>([]);
  const [toOpen, setToOpen] = useState(false);
  const [recorder, setRecorder] = useState<Recorder | null>(null);
  const ref = useRef<HTMLTextAreaElement>(null);
  const picker = useRef<HTMLInputElement>(null);
  const toMenu = useRef<HTMLDivElement>(null);
  const { draft } = props;
  const canAttach = store.features.attachments && draft.mode !== "edit";

  useEffect(() => {
    if (draft.mode === "edit") setText(draft.line.text ?? "");
    if (draft.mode !== "new") ref.current?.focus();
  }, [draft]);

  // The menu of who the message is for opens on the choice that stands.
  useEffect(() => {
    if (toOpen) (toMenu.current?.querySelector<HTMLButtonElement>('[aria-checked="true"]') ?? toMenu.current?.querySelector("button"))?.focus();
  }, [toOpen]);

  const room = store.rooms.get(props.spaceId);
  const people = (room?.sheet?.members ?? [])
    .filter((m) => m.participant_id !== store.me?.id)
    .map((m) => {
      const p = store.participants.get(m.participant_id);
      // An agent is offered with its harness: "J1 — Jacobian agent" (docs/adr/0100).
      return { name: m.name ?? store.nameOf(m.participant_id), kind: p ? kindWords(p) : (m.kind ?? "") };
    });
  const before = text.slice(0, caret);
  const offer = suggestions(before, people);
  const harnesses = harnessesOf(room?.sheet?.members ?? [], store.nameOf);
  const pick = store.picks.get(props.spaceId) ?? null;
  const mineLast = [...(room?.lines ?? [])].reverse().find((l) => l.author_id === store.me?.id && l.addressed_to !== undefined);
  const goes = destination(harnesses, pick, mineLast?.addressed_to ?? null);
  const choosing = harnesses.length > 1 && draft.mode !== "edit";
  const uploading = chosen.some((c) => !c.uploaded && !c.error);
  const ready = chosen.filter((c) => c.uploaded).map((c) => c.uploaded!);

  const update = (id: number, change: Partial<Chosen>) => setChosen((all) => all.map((c) => (c.id === id ? { ...c, ...change } : c)));

  /** Files picked, dropped or pasted (or a voice note recorded): each checked against its
   * cap, then sent up at once. */
  const attach = (files: FileList | File[] | null | undefined, voiceNote = false) => {
    if (!files || !canAttach) return;
    const added: Chosen[] = [];
    for (const file of Array.from(files)) {
      const kind: FileKind = voiceNote ? "voice_note" : kindOf(file.type);
      const item: Chosen = { id: ++chosenId, name: file.name, size: file.size, kind, sent: 0 };
      const refused = overCap(store.caps, kind, file.size);
      if (refused) {
        item.error = refused;
      } else {
        const up = store.api!.upload(file, (sent) => update(item.id, { sent }), { voiceNote });
        item.abort = up.abort;
        up.done.then(
          (uploaded) => update(item.id, { uploaded, sent: file.size }),
          (err: Error) => update(item.id, { error: err.message }),
        );
      }
      added.push(item);
    }
    setChosen((all) => [...all, ...added]);
  };

  /** The microphone: the first press records, the second stops and attaches the note. */
  const record = async () => {
    setError(null);
    try {
      if (!recorder) {
        setRecorder(await startRecording());
        return;
      }
      setRecorder(null);
      attach([await recorder.stop()], true);
    } catch (err) {
      setRecorder(null);
      setError(`The voice note could not be recorded: ${(err as Error).message}`);
    }
  };
  const recording = useRef<Recorder | null>(null);
  recording.current = recorder;
  useEffect(() => () => recording.current?.cancel(), []); // leaving the room stops the microphone

  const drop = (item: Chosen) => {
    item.abort?.();
    setChosen((all) => all.filter((c) => c.id !== item.id));
  };

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
    if ((!words && !ready.length) || uploading) return;
    setError(null);
    // Archive asks first (docs/product/spaces.md, Retitling and archiving): /archive, as the door
    // reads it, opens the same sheet as the room's menu; /unarchive goes straight through.
    if (draft.mode !== "edit" && props.onArchive && !chosen.length && /^\/archive$/i.test(words)) {
      setText("");
      setCaret(0);
      props.setDraft({ mode: "new" });
      props.onArchive();
      return;
    }
    setText("");
    setCaret(0);
    const files = takeReady();
    const d = draft;
    props.setDraft({ mode: "new" });
    try {
      if (d.mode === "edit") {
        await store.send({ type: "message.edited", space_id: props.spaceId, message_id: d.line.id, text: words });
      } else {
        const to = pick && choosing ? pick : undefined;
        // An @ decides by itself (rule 1); the field then follows where it went.
        if (/(^|\s)@\w/u.test(words)) store.picks.delete(props.spaceId);
        await store.say(props.spaceId, words, d.mode === "reply" ? d.line.id : null, { uploads: files, ...(to ? { to } : {}) });
      }
    } catch (err) {
      setError((err as Error).message);
      if (d.mode === "edit" || words.startsWith("/") || /^wreply\b/i.test(words)) setText(words);
    }
  };

  /** The files going with this message; the tray is cleared of them and of refusals. */
  function takeReady(): Uploaded[] {
    setChosen([]);
    return ready;
  }

  const listId = `picker-${props.spaceId}`;
  return (
    <form
      class="composer"
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
      onDragOver={(e) => canAttach && e.dataTransfer?.types.includes("Files") && e.preventDefault()}
      onDrop={(e) => {
        if (!canAttach || !e.dataTransfer?.files.length) return;
        e.preventDefault();
        attach(e.dataTransfer.files);
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
      {chosen.length > 0 && (
        <ul class="tray" aria-label="Files to send" aria-live="polite" data-testid="tray">
          {chosen.map((c) => (
            <li key={c.id} class={c.error ? "chip refused" : "chip"}>
              <span class="chip-name">{c.name}</span>
              {c.error ? (
                <span class="error small" role="alert">
                  {c.error}
                </span>
              ) : c.uploaded ? (
                <span class="muted small">{sizeWords(c.size)} · ready</span>
              ) : (
                <>
                  <progress max={c.size || 1} value={c.sent} aria-label={`Sending ${c.name}`} />
                  <span class="muted small" aria-hidden="true">
                    {c.size ? Math.floor((c.sent / c.size) * 100) : 0}%
                  </span>
                </>
              )}
              <button type="button" class="icon small" aria-label={`Take ${c.name} off`} onClick={() => drop(c)}>
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      {toOpen && choosing && (
        <div
          class="picker to-list"
          ref={toMenu}
          role="menu"
          aria-label="Who the message is for"
          data-testid="to-list"
          onKeyDown={(e) => {
            if (e.key === "Escape") {
              setToOpen(false);
              return;
            }
            // Up and down move between the choices, as in any menu.
            if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
            e.preventDefault();
            const items = [...e.currentTarget.querySelectorAll<HTMLButtonElement>("button")];
            const at = items.indexOf(document.activeElement as HTMLButtonElement);
            const next = (at + (e.key === "ArrowDown" ? 1 : -1) + items.length) % items.length;
            items[next]?.focus();
          }}
        >
          {[{ id: "everyone", name: "Everyone" }, ...harnesses].map((h) => {
            const on = h.id === "everyone" ? goes.everyone : goes.ids.length === 1 && goes.ids[0] === h.id;
            return (
              <button
                key={h.id}
                type="button"
                role="menuitemradio"
                aria-checked={on}
                class={on ? "active" : ""}
                onClick={() => {
                  store.picks.set(props.spaceId, [h.id]);
                  setToOpen(false);
                  store.changed();
                  ref.current?.focus();
                }}
              >
                <Face id={h.id} only class="solo" />
                <strong>{h.name}</strong>{" "}
                <span class="muted small">{h.id === "everyone" ? "every agent here takes a turn" : "only this agent takes a turn"}</span>
              </button>
            );
          })}
        </div>
      )}
      <div class="compose-row">
        {choosing && (
          <button
            type="button"
            class="to"
            aria-haspopup="menu"
            aria-expanded={toOpen}
            title="Who the message is for"
            data-testid="to"
            onClick={() => setToOpen(!toOpen)}
          >
            <span class="to-label">To</span>{" "}
            <span class="to-words">{goes.words}</span>
          </button>
        )}
        {canAttach && (
          <>
            <input
              ref={picker}
              type="file"
              multiple
              class="sr-only"
              tabIndex={-1}
              aria-hidden="true"
              data-testid="file-input"
              onChange={(e) => {
                attach(e.currentTarget.files);
                e.currentTarget.value = "";
              }}
            />
            <button
              type="button"
              class={`icon record${recorder ? " recording" : ""}`}
              aria-label={recorder ? "Stop recording and attach the voice note" : "Record a voice note"}
              aria-pressed={recorder !== null}
              data-testid="record"
              onClick={() => void record()}
            >
              {/* A microphone drawn inline; a square while recording. */}
              <svg width="20" height="20" viewBox="0 0 24 24" aria-hidden="true" focusable="false">
                {recorder ? (
                  <rect x="6" y="6" width="12" height="12" rx="2" fill="currentColor" />
                ) : (
                  <path d="M12 3a3 3 0 0 0-3 3v6a3 3 0 0 0 6 0V6a3 3 0 0 0-3-3zM5 11a7 7 0 0 0 14 0M12 18v3" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" />
                )}
              </svg>
            </button>
            <button type="button" class="icon attach" aria-label="Attach files" onClick={() => picker.current?.click()}>
              {/* A paper clip drawn inline: no emoji font is needed to see it. */}
              <svg width="20" height="20" viewBox="0 0 24 24" aria-hidden="true" focusable="false">
                <path
                  d="M21 11.5l-8.6 8.6a5.5 5.5 0 0 1-7.8-7.8l8.6-8.6a3.7 3.7 0 0 1 5.2 5.2l-8.6 8.6a1.8 1.8 0 0 1-2.6-2.6l7.9-7.9"
                  fill="none"
                  stroke="currentColor"
                  stroke-width="2"
                  stroke-linecap="round"
                  stroke-linejoin="round"
                />
              </svg>
            </button>
          </>
        )}
        <label for={`composer-${props.spaceId}`} class="sr-only">
          Message {props.title}
        </label>
        <textarea
          id={`composer-${props.spaceId}`}
          ref={ref}
          rows={1}
          placeholder={choosing ? `Message ${goes.words}` : `Message ${props.title}`}
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
          onPaste={(e) => {
            if (canAttach && e.clipboardData?.files.length) {
              e.preventDefault();
              attach(e.clipboardData.files);
            }
          }}
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
        <button type="submit" class="primary" disabled={(!text.trim() && !ready.length) || uploading} title={uploading ? "Waiting for the files to finish" : undefined}>
          {draft.mode === "edit" ? "Save" : "Send"}
        </button>
      </div>
    </form>
  );
}
