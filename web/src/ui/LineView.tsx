import { useLayoutEffect, useRef, useState } from "preact/hooks";
import { dust } from "../dust";
import { heardLine, reactionsOf } from "../lines";
import { lineActs, type RoomMay } from "../may";
import { kindWords, refereeWords } from "../agents";
import { renderMarkdown } from "../markdown";
import type { Line } from "../protocol";
import type { Room } from "../store";
import { Face } from "./Face";
import { formatTime, useMenu, useStore } from "./hooks";
import { Confirm, Modal } from "./Modal";
import { PostCard } from "./Cards";
import { Attachments } from "./Files";

const REASONS: [string, string][] = [
  ["wrong_facts", "Wrong facts"],
  ["missed_the_ask", "Missed what I asked"],
  ["too_long", "Too long"],
  ["not_finished", "Not finished"],
];

export function LineView(props: {
  line: Line;
  room: Room;
  threadId: string | null;
  /** Where the message went, when that changed from its sender's last (docs/product/spaces.md). */
  route: string | null;
  /** The margin note under the last of a stretch of held words (docs/product/spaces.md). */
  heldNote: string | null;
  /** The line a search hit opened the room at. */
  found: boolean;
  /** What I may do in the room (null: not known yet), and whether it is archived. */
  may: RoomMay | null;
  closed: boolean;
  sendingKey?: string;
  onReply: () => void;
  onEdit: () => void;
}) {
  const store = useStore();
  const { line, room } = props;
  const menuWrap = useRef<HTMLDivElement>(null);
  const [menu, setMenu] = useMenu(menuWrap);
  const [dialog, setDialog] = useState<"delete" | "wrong" | null>(null);
  const article = useRef<HTMLElement>(null);
  // Back after an Undo: its dust runs backwards as it is drawn again.
  useLayoutEffect(() => {
    if (article.current && store.returning.delete(line.id)) void dust(article.current, true);
  }, [line.id]);
  // Taken back: the tombstone stands where the dust went.
  useLayoutEffect(() => {
    const el = article.current;
    if (!line.deleted || !el) return;
    for (const a of el.getAnimations({ subtree: true })) a.cancel();
    el.querySelector(".dust")?.remove();
    delete el.dataset["motion"];
  }, [line.deleted]);
  const me = store.me?.id;
  const mine = line.author_id === me;
  const author = store.participants.get(line.author_id);
  const isHarness = author?.kind === "harness" || line.author_id.startsWith("hrn_") || line.author_id.startsWith("agt_");
  const name = store.nameOf(line.author_id);
  const kind = author?.kind === "agent" ? kindWords(author) : null;

  if (line.kind === "system") {
    return (
      <div class="system-line" id={`line-${line.id}`} data-seq={line.seq}>
        {(line.drawn && refereeWords(line.drawn, store.nameOf)) || line.text}
      </div>
    );
  }

  const act = async (event: Record<string, unknown>) => {
    setMenu(false);
    try {
      await store.send({ space_id: room.id, message_id: line.id, ...event });
    } catch (err) {
      store.toast((err as Error).message);
    }
  };
  const pending = props.sendingKey !== undefined;
  const live = !line.deleted && !pending;
  // The menu offers what the door would take from me (the sheet's `may`); a tombstone, Delete for me.
  const acts = lineActs(line, me, props.may, props.closed);
  const hasMenu = !pending && (live || acts.hideForMe);
  const replied = line.reply_to ? room.lines.find((l) => l.id === line.reply_to) : undefined;
  const html = line.text && line.kind === "text" ? renderMarkdown(line.text, store.handles(room.id), me ?? null) : null;
  const reactions = reactionsOf(line);
  const corrections = line.feedback.filter((f) => f.kind === "correction");
  const heard = heardLine(line, store.nameOf);

  return (
    <article
      ref={article}
      class={`line ${mine ? "mine" : ""} ${line.kind !== "text" ? "has-card" : ""}${props.found ? " found" : ""}`}
      id={`line-${line.id}`}
      data-seq={line.seq}
      data-testid="line"
      aria-current={props.found ? "true" : undefined}
      aria-label={`${name}, ${formatTime(line.ts)}`}
      onContextMenu={(e) => {
        if (!hasMenu) return;
        e.preventDefault();
        setMenu(true);
      }}
    >
      <div class="line-head">
        {author?.kind === "agent" && <Face id={line.author_id} only class="solo" />}
        <span class={isHarness ? "author harness" : "author"}>{name}</span>
        {kind && <span class="muted small agent-kind">{kind}</span>}
        {line.held && (
          <span class="held-tag small" data-testid="held" title="Held by Chips: for nobody until a person acts">
            held
          </span>
        )}
        <time class="muted small" dateTime={line.ts}>
          {pending ? (line.failed ? "not sent" : "sending…") : formatTime(line.ts)}
        </time>
        {props.route && (
          <span class="route" data-testid="route">
            {mine ? "You " : ""}→ {props.route}
          </span>
        )}
        {line.edited && !line.deleted && <span class="muted small">edited</span>}
        {line.pinned && <span class="small muted">pinned</span>}
        {hasMenu && (
          <div class="menu-wrap" ref={menuWrap}>
            <button type="button" class="icon dots" aria-label={`Actions for ${name}'s message`} aria-haspopup="menu" aria-expanded={menu} onClick={() => setMenu(!menu)}>
              ⋯
            </button>
            {menu && (
              <div class="menu" role="menu">
                {acts.reply && (
                  <button role="menuitem" type="button" onClick={() => (setMenu(false), props.onReply())}>
                    Reply
                  </button>
                )}
                {/* A thread already opened (by a harness, or over the API) is read and answered
                    in; the app opens none itself (docs/adr/0152). */}
                {live && props.threadId && (
                  <a role="menuitem" href={`#/room/${encodeURIComponent(props.threadId)}`}>
                    Open thread
                  </a>
                )}
                {live && isHarness && (
                  <button role="menuitem" type="button" onClick={() => (setMenu(false), setDialog("wrong"))}>
                    Not right?
                  </button>
                )}
                {acts.pin && (
                  <button role="menuitem" type="button" onClick={() => act({ type: line.pinned ? "message.unpinned" : "message.pinned" })}>
                    {line.pinned ? "Unpin" : "Pin"}
                  </button>
                )}
                {acts.edit && (
                  <button role="menuitem" type="button" onClick={() => (setMenu(false), props.onEdit())}>
                    Edit
                  </button>
                )}
                <button
                  role="menuitem"
                  type="button"
                  onClick={async () => {
                    setMenu(false);
                    // It breaks into dust as it goes; Undo runs the dust backwards (dust.ts).
                    if (article.current) await dust(article.current);
                    await act({ type: "message.hidden" });
                    store.toast("Deleted for you.", () => {
                      store.returning.add(line.id);
                      void store.send({ type: "message.shown", space_id: room.id, message_id: line.id }).catch(() => store.returning.delete(line.id));
                    });
                  }}
                >
                  Delete for me
                </button>
                {acts.deleteForEveryone && (
                  <button role="menuitem" type="button" class="danger-text" onClick={() => (setMenu(false), setDialog("delete"))}>
                    Delete for everyone…
                  </button>
                )}
              </div>
            )}
          </div>
        )}
      </div>
      {replied && (
        <a class="quote" href={`#line-${replied.id}`} onClick={(e) => (e.preventDefault(), document.getElementById(`line-${replied.id}`)?.scrollIntoView({ block: "center" }))}>
          ↩ {store.nameOf(replied.author_id)}: {(replied.text ?? "").replace(/[*_`~#>]+/g, "").slice(0, 80)}
        </a>
      )}
      {line.deleted ? (
        <div class="bubble tombstone">This message was taken back.</div>
      ) : line.kind === "text" ? (
        html || !line.attachments?.length ? <div class="bubble md" dangerouslySetInnerHTML={{ __html: html ?? "" }} /> : null
      ) : (
        <PostCard line={line} />
      )}
      {!line.deleted && line.attachments && line.attachments.length > 0 && <Attachments files={line.attachments} pending={pending} />}
      {line.failed && (
        <p class="error small" role="alert">
          Not sent: {line.failed}{" "}
          <button type="button" class="link" onClick={() => store.dismissFailed(props.sendingKey!)}>
            Dismiss
          </button>
        </p>
      )}
      {line.receipt && mine && (
        <span class={`receipt ${line.receipt}`} data-testid="receipt">
          {line.receipt === "queued" ? "queued for the run's next look" : "steered the run"}
        </span>
      )}
      {line.held_since && (
        <p class="small muted" data-testid="held-since">
          Said while {name} was in no room, {formatTime(line.held_since)}
        </p>
      )}
      {props.heldNote && (
        <p class="held-note small muted" data-testid="held-note">
          {props.heldNote}
        </p>
      )}
      {heard && (
        <p class="heard small muted" data-testid="heard">
          {heard}
        </p>
      )}
      {(reactions.length > 0 || corrections.length > 0 || props.threadId) && (
        <div class="under">
          {/* Reactions others sent (older clients, the API) are drawn; the app sends none (docs/adr/0152). */}
          {reactions.map(([emoji, who]) => (
            <span
              key={emoji}
              role="img"
              class={who.includes(me ?? "") ? "reaction on" : "reaction"}
              data-testid="reaction"
              aria-label={`${emoji} ${who.length}: ${who.map(store.nameOf).join(", ")}`}
              title={who.map(store.nameOf).join(", ")}
            >
              {emoji} {who.length}
            </span>
          ))}
          {corrections.map((c, i) => (
            <p key={i} class="correction small">
              {store.nameOf(c.from)} said this is not right{c.reasons?.length ? ` (${c.reasons.map((r) => REASONS.find(([k]) => k === r)?.[1] ?? r).join(", ")})` : ""}
              {c.note ? `: ${c.note}` : ""}
            </p>
          ))}
          {props.threadId && (
            <a class="small thread-link" href={`#/room/${encodeURIComponent(props.threadId)}`}>
              Thread →
            </a>
          )}
        </div>
      )}
      {dialog === "delete" && (
        <Confirm
          title="Delete for everyone?"
          body="A tombstone stands where the message was. The agents in the room have read it already and keep what they read."
          action="Delete for everyone"
          onClose={() => setDialog(null)}
          onConfirm={() => void (async () => {
            if (article.current) await dust(article.current);
            await act({ type: "message.deleted" });
          })()}
        />
      )}
      {dialog === "wrong" && <NotRight onSend={(ev) => act(ev)} onClose={() => setDialog(null)} />}
    </article>
  );
}

function NotRight(props: { onSend: (e: Record<string, unknown>) => Promise<void>; onClose: () => void }) {
  const [reasons, setReasons] = useState<string[]>([]);
  const [note, setNote] = useState("");
  return (
    <Modal title="Not right?" onClose={props.onClose}>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          const ev: Record<string, unknown> = { type: "feedback", kind: "correction" };
          if (reasons.length) ev["reasons"] = reasons;
          if (note.trim()) ev["note"] = note.trim();
          await props.onSend(ev);
          props.onClose();
        }}
      >
        <fieldset>
          <legend>What was wrong</legend>
          {REASONS.map(([value, label]) => (
            <label key={value} class="check">
              <input
                type="checkbox"
                checked={reasons.includes(value)}
                onChange={(e) => setReasons(e.currentTarget.checked ? [...reasons, value] : reasons.filter((r) => r !== value))}
              />{" "}
              {label}
            </label>
          ))}
        </fieldset>
        <label for="wrong-note">In your words</label>
        <textarea id="wrong-note" rows={3} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
        <div class="row end">
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" class="primary" disabled={!reasons.length && !note.trim()}>
            Send
          </button>
        </div>
      </form>
    </Modal>
  );
}
