import { useState } from "preact/hooks";
import type { SpaceRow } from "../protocol";
import { useStore } from "./hooks";
import { Modal } from "./Modal";
import { Search } from "./Search";

export function RoomList(props: { current: string | null; showArchived: boolean }) {
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
        <span class="me">{store.me?.name ?? "…"}</span>
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
  return (
    <li>
      <a
        href={`#/room/${encodeURIComponent(s.id)}`}
        class={props.current ? "room-link current" : "room-link"}
        aria-current={props.current ? "page" : undefined}
        data-space={s.id}
      >
        <span class="room-title">
          {s.locked && <span aria-label="locked" title="Changes locked">🔒 </span>}
          {title}
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
  const [title, setTitle] = useState("");
  const [error, setError] = useState<string | null>(null);
  return (
    <Modal title="New room" onClose={props.onClose}>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          try {
            const id = await store.create({ type: "space.created", kind: "group", title: title.trim(), members: [] });
            props.onClose();
            if (id) location.hash = `#/room/${encodeURIComponent(id)}`;
          } catch (err) {
            setError((err as Error).message);
          }
        }}
      >
        <label for="new-room-title">Title</label>
        <input id="new-room-title" required maxLength={200} value={title} onInput={(e) => setTitle(e.currentTarget.value)} />
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <div class="row end">
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" class="primary" disabled={!title.trim()}>
            Open the room
          </button>
        </div>
      </form>
    </Modal>
  );
}
