// The inbox (issue #29): what waits for me, newest first — each naming the room, the line
// and what is asked, opening the room at that line; an approval decided in place; needs me
// or everything; mark all read. Its link with the unread badge heads the room list.
import { useEffect, useState } from "preact/hooks";
import { inbox } from "../inbox";
import { askPermission } from "../push";
import { badge, decidable, doneWords, hrefOf, kindWords, type Ntf } from "../notifications";
import { formatTime, useStore } from "./hooks";

/** The inbox's row at the head of the room list, with what is unread. */
export function InboxLink(props: { current: boolean }) {
  useStore();
  if (inbox.available === false) return null;
  const count = badge(inbox.unread);
  return (
    <a
      href="#/inbox"
      class={props.current ? "room-link inbox-link current" : "room-link inbox-link"}
      aria-current={props.current ? "page" : undefined}
      data-testid="inbox-link"
    >
      <span class="room-title">Inbox</span>
      {count && (
        <span class="unread" data-testid="inbox-badge" aria-label={`${inbox.unread} unread notifications`}>
          {count}
        </span>
      )}
    </a>
  );
}

export function InboxPage() {
  const store = useStore();
  useEffect(() => {
    if (inbox.lists[inbox.filter] === null && store.api) void inbox.load(inbox.filter);
  }, [store.api]);
  const list = inbox.shown;
  return (
    <section class="page inbox" aria-label="Inbox">
      <div class="inbox-head">
        <h1>
          <a class="back icon" href="#/" aria-label="Back to rooms">
            ←
          </a>{" "}
          Inbox
        </h1>
        <div class="row wrap">
          <div role="group" aria-label="Show" class="seg">
            {(
              [
                ["needs_me", `Needs me${inbox.needsMe ? ` (${inbox.needsMe})` : ""}`],
                ["all", "Everything"],
              ] as const
            ).map(([f, words]) => (
              <button key={f} type="button" aria-pressed={inbox.filter === f} class={inbox.filter === f ? "on" : ""} onClick={() => inbox.setFilter(f)} data-testid={`filter-${f}`}>
                {words}
              </button>
            ))}
          </div>
          <button type="button" disabled={inbox.unread === 0} onClick={() => void inbox.markAllRead()} data-testid="mark-all-read">
            Mark all read
          </button>
          {typeof Notification !== "undefined" && Notification.permission === "default" && (
            <button type="button" onClick={() => void askPermission().then(() => store.changed())} data-testid="ask-permission">
              Notify me in this browser
            </button>
          )}
          <a href="#/notifications" class="link">
            Settings
          </a>
        </div>
      </div>
      {inbox.error && (
        <p class="error" role="alert">
          {inbox.error}
        </p>
      )}
      <ul class="inbox-list" data-testid="inbox">
        {list.map((n) => (
          <InboxItem key={n.id} n={n} />
        ))}
      </ul>
      {list.length === 0 && !inbox.loading && inbox.lists[inbox.filter] !== null && (
        <p class="muted" data-testid="inbox-empty">
          {inbox.filter === "needs_me" ? "Nothing waits for you." : "No notifications yet."}
        </p>
      )}
      {inbox.more[inbox.filter] && (
        <button type="button" disabled={inbox.loading} onClick={() => void inbox.load(inbox.filter, true)}>
          Older
        </button>
      )}
    </section>
  );
}

function InboxItem(props: { n: Ntf }) {
  const store = useStore();
  const { n } = props;
  const [busy, setBusy] = useState(false);
  const space = store.spaces.get(n.space_id);
  const room = n.space_name ?? (space ? store.title(space) : "a room");
  const done = doneWords(n);
  const decide = async (decision: "approve" | "deny") => {
    setBusy(true);
    try {
      await inbox.decide(n, decision);
    } catch (err) {
      store.toast((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <li
      class={`inbox-item${n.read_at ? "" : " unread-item"}${n.done_at ? " done" : ""}`}
      data-testid="notification"
      data-id={n.id}
      data-kind={n.kind}
      data-state={n.done_at ? "done" : n.read_at ? "read" : "unread"}
    >
      <a href={hrefOf(n)} class="inbox-open" onClick={() => void inbox.markRead([n.id])}>
        <span class="small muted">
          {kindWords(n.kind)} · <span data-testid="notification-room">{room}</span> · {formatTime(n.created_at)}
        </span>
        <strong class="inbox-title">{n.title}</strong>
        {n.body && <span class="inbox-body">{n.body}</span>}
      </a>
      {done ? (
        <span class="small muted" data-testid="notification-done">
          {done}
        </span>
      ) : (
        decidable(n) && (
          <span class="row">
            <button type="button" class="primary small" disabled={busy} onClick={() => void decide("approve")}>
              Approve
            </button>
            <button type="button" class="danger small" disabled={busy} onClick={() => void decide("deny")}>
              Deny
            </button>
          </span>
        )
      )}
    </li>
  );
}

/** The room menu's mute: muted rooms notify only of approvals and questions only I can answer. */
export function MuteItem(props: { spaceId: string; onDone: () => void }) {
  useStore();
  if (inbox.available === false) return null;
  const muted = inbox.mutedOf(props.spaceId);
  return (
    <button
      role="menuitem"
      type="button"
      disabled={muted === undefined}
      data-testid="room-mute"
      onClick={() => {
        props.onDone();
        void inbox.mute(props.spaceId, !muted);
      }}
    >
      {muted ? "Unmute notifications" : "Mute notifications"}
    </button>
  );
}
