import { useState } from "preact/hooks";
import { askableFaces, askedRoom, lastAsked, tapFace } from "../asking";
import { listWords } from "../lines";
import type { SpaceRow } from "../protocol";
import { useStore } from "./hooks";
import { InboxLink } from "./Inbox";
import { Modal } from "./Modal";
import { Search } from "./Search";

export function RoomList(props: { current: string | null; showArchived: boolean; inbox?: boolean }) {
  const store = useStore();
  const [creating, setCreating] = useState(false);
  const [archivedOpen, setArchivedOpen] = useState(props.showArchived);
  const rows = [...store.spaces.values()].sort((a, b) => b.last_seq - a.last_seq);
  const sections: [string, SpaceRow[]][] = [
    ["Direct", rows.filter((s) => s.kind === "direct")],
    ["Rooms", rows.filter((s) => s.kind === "group")],
    ["Threads", rows.filter((s) => s.kind === "thread")],
  ];
  return (
    <nav class="sidebar" aria-label="Rooms">
      <div class="side-head">
        <span class="brand">Chips</span>
        <button type="button" class="primary small" onClick={() => setCreating(true)}>
          + New room
        </button>
      </div>
      {store.features.search && <Search />}
      <div class="side-scroll">
        <InboxLink current={!!props.inbox} />
        {sections.map(([name, list]) =>
          list.length ? (
            <section key={name} aria-labelledby={`sec-${name}`}>
              <h2 id={`sec-${name}`} class="section">
                {name}
              </h2>
              <ul class="rooms">
                {list.map((s) => (
                  <RoomItem key={s.id} space={s} current={props.current === s.id} />
                ))}
              </ul>
            </section>
          ) : null,
        )}
        {rows.length === 0 && store.me && <p class="muted pad">No rooms yet.</p>}
        <section aria-label="Archived">
          <button
            type="button"
            class="section-toggle"
            aria-expanded={archivedOpen}
            data-testid="archived-toggle"
            onClick={() => {
              const open = !archivedOpen;
              setArchivedOpen(open);
              if (open) void store.loadArchived();
            }}
          >
            {archivedOpen ? "▾" : "▸"} Archived <span class="count">{store.archivedCount}</span>
          </button>
          {archivedOpen && (
            <ul class="rooms" data-testid="archived-list">
              {(store.archived ?? []).map((s) => (
                <RoomItem key={s.id} space={s} current={props.current === s.id} />
              ))}
              {store.archived?.length === 0 && <li class="muted pad">Nothing archived.</li>}
            </ul>
          )}
        </section>
      </div>
      <div class="side-foot">
        <a href="#/profile" class="me link" title="Your profile">
          {store.me?.name ?? "…"}
        </a>
        <a href="#/people" class="link">
          People
        </a>
        <a href="#/devices" class="link">
          Devices
        </a>
        <a href="#/notifications" class="link">
          Notifications
        </a>
        <a href="#/agents" class="link">
          Agents
        </a>
        <a href="#/settings" class="link">
          Settings
        </a>
        <button type="button" class="link" onClick={() => store.signOut()}>
          Sign out
        </button>
      </div>
      {creating && <NewRoom onClose={() => setCreating(false)} />}
    </nav>
  );
}

function RoomItem(props: { space: SpaceRow; current: boolean }) {
  const store = useStore();
  const s = props.space;
  const unread = props.current ? 0 : store.unread(s);
  const title = store.title(s);
  const parentOf = (id: string) => {
    const row = store.spaces.get(id) ?? store.archived?.find((r) => r.id === id);
    return row ? store.title(row) : "a room";
  };
  return (
    <li>
      <a
        href={`#/room/${encodeURIComponent(s.id)}`}
        class={props.current ? "room-link current" : "room-link"}
        aria-current={props.current ? "page" : undefined}
        data-space={s.id}
      >
        <span class="room-words">
          <span class="room-title">
            {s.locked && <span aria-label="locked" title="Changes locked">🔒 </span>}
            {title}
          </span>
          {s.kind === "thread" && s.parent_space_id && <span class="muted small room-in">in {parentOf(s.parent_space_id)}</span>}
        </span>
        {unread > 0 && (
          <span class="unread" aria-label={`${unread} unread`}>
            {unread}
          </span>
        )}
      </a>
    </li>
  );
}

function NewRoom(props: { onClose: () => void }) {
  const store = useStore();
  const faces = askableFaces(store.participants.values());
  const offered = faces.map((f) => f.participant_id);
  const [title, setTitle] = useState("");
  // It opens on whoever was asked last (docs/adr/0143).
  const [picked, setPicked] = useState<string[]>(() =>
    lastAsked(store.spaces.values(), store.me?.id ?? null, offered, (id) => store.participants.get(id)?.harness_id),
  );
  const [error, setError] = useState<string | null>(null);
  const first = picked[0] ? store.nameOf(picked[0]) : null;
  return (
    <Modal title="New room" onClose={props.onClose}>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          try {
            const id = await store.create(askedRoom(title, picked));
            props.onClose();
            if (id) location.hash = `#/room/${encodeURIComponent(id)}`;
          } catch (err) {
            setError((err as Error).message);
          }
        }}
      >
        <label for="new-room-title">Title{picked.length ? " (optional)" : ""}</label>
        <input id="new-room-title" required={!picked.length} maxLength={200} value={title} onInput={(e) => setTitle(e.currentTarget.value)} />
        {faces.length > 0 && (
          <fieldset class="faces" data-testid="faces">
            <legend>Ask a harness to make something of its own for it</legend>
            <div class="chips-row">
              {faces.map((f) => {
                const on = picked.includes(f.participant_id);
                return (
                  <button
                    type="button"
                    key={f.participant_id}
                    class={on ? "face-chip on" : "face-chip"}
                    aria-pressed={on}
                    onClick={() => setPicked(tapFace(picked, f.participant_id))}
                  >
                    {f.name}
                    {picked[0] === f.participant_id ? " · asked" : ""}
                  </button>
                );
              })}
            </div>
            <p class="muted small" data-testid="asked-words">
              {first
                ? `The room is asked of ${first}${picked.length > 1 ? `; ${listWords(picked.slice(1).map(store.nameOf))} ${picked.length > 2 ? "are" : "is"} put in it too` : ""}.`
                : "Nobody is asked: a room of your own."}
            </p>
          </fieldset>
        )}
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <div class="row end">
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" class="primary" disabled={!title.trim() && !picked.length}>
            {first ? `Open it and ask ${first}` : "Open the room"}
          </button>
        </div>
      </form>
    </Modal>
  );
}
