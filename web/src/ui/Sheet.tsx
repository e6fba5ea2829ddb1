// The room sheet: who is in the room and their standing, adding anyone from the
// directory, taking people out, and leaving (spec/spaces.md).
import { useState } from "preact/hooks";
import { useStore } from "./hooks";
import { Modal } from "./Modal";
import { RoomFiles } from "./Files";

export function RoomSheet(props: { spaceId: string; onClose: () => void }) {
  const store = useStore();
  const room = store.rooms.get(props.spaceId);
  const sheet = room?.sheet;
  const [adding, setAdding] = useState("");
  const meStanding = sheet?.members.find((m) => m.participant_id === store.me?.id)?.standing;
  const admin = store.me?.role === "owner" || store.me?.role === "admin";
  const inRoom = new Set(sheet?.members.map((m) => m.participant_id));
  const others = [...store.participants.values()].filter((p) => !inRoom.has(p.participant_id)).sort((a, b) => a.name.localeCompare(b.name));
  const act = async (what: () => Promise<unknown>) => {
    try {
      await what();
    } catch (err) {
      store.toast((err as Error).message);
    }
  };
  if (!sheet) return null;
  const leads = sheet.members.filter((m) => (m as { lead?: boolean }).lead);
  return (
    <Modal title={store.title(sheet)} onClose={props.onClose} wide>
      <p class="muted small">
        {sheet.kind === "direct" ? "Direct" : sheet.kind === "thread" ? "Thread" : "Room"} · {sheet.state === "closed" ? "archived" : "open"}
        {sheet.locked ? " · changes locked" : ""}
        {leads.length ? ` · ${leads.map((l) => l.name).join(", ")} leads` : ""}
      </p>
      <h3>People and harnesses</h3>
      <ul class="members" data-testid="members">
        {sheet.members.map((m) => (
          <li key={m.participant_id}>
            <span>
              {m.name ?? store.nameOf(m.participant_id)}
              {m.participant_id === store.me?.id ? " (you)" : ""}
            </span>
            <span class="muted small">
              {m.kind === "harness" ? "harness" : "person"} · {m.standing}
              {(m as { lead?: boolean }).lead ? " · leads" : ""}
            </span>
            {sheet.kind !== "thread" && (m.participant_id === store.me?.id || meStanding === "owner" || admin) && (
              <button type="button" class="small" onClick={() => act(() => store.api!.removeMember(props.spaceId, m.participant_id))}>
                {m.participant_id === store.me?.id ? "Leave" : "Remove"}
              </button>
            )}
          </li>
        ))}
      </ul>
      {sheet.kind !== "thread" && others.length > 0 && (
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault();
            if (adding) void act(() => store.api!.addMember(props.spaceId, adding)).then(() => setAdding(""));
          }}
        >
          <label for="add-member">Add</label>
          <select id="add-member" value={adding} onChange={(e) => setAdding(e.currentTarget.value)}>
            <option value="">Choose someone…</option>
            {others.map((p) => (
              <option key={p.participant_id} value={p.participant_id}>
                {p.name} ({p.kind})
              </option>
            ))}
          </select>
          <button type="submit" class="primary" disabled={!adding}>
            Add
          </button>
        </form>
      )}
      {store.features.attachments && <RoomFiles spaceId={props.spaceId} />}
    </Modal>
  );
}
