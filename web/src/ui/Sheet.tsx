// The room sheet: who is in the room and their standing, adding anyone from the
// directory, taking people out, and leaving (docs/product/spaces.md); its agents with their
// harness and face, moving one here from another room, asking a harness for a copy or a
// new agent, and the job's spend against the room's ceiling (docs/product/websocket.md; ADR 0100).
import { useState } from "preact/hooks";
import { ApiError } from "../api";
import { dollars, kindWords, mayAsk, parseCeiling, spendWords, statusWords, whereWords } from "../agents";
import type { Participant } from "../protocol";
import type { Elsewhere } from "../store";
import { withEmoji } from "../faces";
import { Face } from "./Face";
import { useStore } from "./hooks";
import { Modal } from "./Modal";
import { RoomFiles } from "./Files";

export function RoomSheet(props: { spaceId: string; onClose: () => void }) {
  const store = useStore();
  const room = store.rooms.get(props.spaceId);
  const sheet = room?.sheet;
  const [adding, setAdding] = useState("");
  const [elsewhere, setElsewhere] = useState<Elsewhere | null>(null);
  // Whom the door would take here, as the sheet's `may` says (ADR 0142): no archived or
  // Main agent anywhere, and a Main room takes people only.
  const addable = new Set(sheet?.may.add ?? []);
  const others = [...store.participants.values()].filter((p) => addable.has(p.participant_id)).sort((a, b) => a.name.localeCompare(b.name));
  const act = async (what: () => Promise<unknown>) => {
    try {
      await what();
    } catch (err) {
      store.toast((err as Error).message);
    }
  };
  const add = async (pid: string) => {
    setElsewhere(null);
    try {
      await store.api!.addMember(props.spaceId, pid);
      setAdding("");
    } catch (err) {
      // An agent is in one room at a time: offer to move it instead (docs/product/websocket.md).
      if (err instanceof ApiError && err.code === "agent_elsewhere") {
        setElsewhere({ agentId: pid, spaceId: (err.extra["space_id"] as string | undefined) ?? null });
      } else {
        store.toast((err as Error).message);
      }
    }
  };
  if (!sheet) return null;
  const leads = sheet.members.filter((m) => m.lead);
  const closed = sheet.state === "closed";
  const where = (p: Participant) => {
    if (p.kind !== "agent") return p.kind;
    const at = whereWords(p, (id) => {
      const room = store.spaces.get(id);
      return room ? store.title(room) : null;
    });
    return `${kindWords(p)}, ${at}`;
  };
  return (
    <Modal title={store.title(sheet)} onClose={props.onClose} wide>
      <p class="muted small">
        {sheet.kind === "direct" ? "Direct" : sheet.kind === "thread" ? "Thread" : "Room"} · {closed ? "archived" : "open"}
        {sheet.locked ? " · changes locked" : ""}
        {leads.length ? ` · ${leads.map((l) => l.name).join(", ")} leads` : ""}
      </p>
      <h3>People and agents</h3>
      <ul class="members" data-testid="members">
        {sheet.members.map((m) => {
          const p = store.participants.get(m.participant_id);
          const harness = p?.kind === "agent" ? store.participants.get(p.harness_id ?? "") : p?.kind === "harness" ? p : undefined;
          const face = statusWords(p?.status);
          // Only a harness with something connected can be asked (spec: "Chips says so … with no button").
          const restartable = harness && harness.capabilities?.includes("restarts") && mayAsk(store.me, harness) && (p?.status === "connected" || p?.status === "trouble");
          return (
            <li key={m.participant_id} data-participant={m.participant_id}>
              <span>
                <Face id={m.participant_id} only class="solo" />
                {m.name ?? store.nameOf(m.participant_id)}
                {m.participant_id === store.me?.id ? " (you)" : ""}
              </span>
              <span class="muted small">
                {p ? kindWords(p) : m.kind === "harness" ? "harness" : m.kind === "agent" ? "agent" : "person"} · {m.standing}
                {m.lead ? " · leads" : ""}
              </span>
              {face && (
                <span class={`face-status ${p?.status ?? ""}`} data-testid="face-status">
                  {face}
                </span>
              )}
              {restartable && (
                <button type="button" class="small" onClick={() => act(async () => (await store.api!.restart(harness.participant_id), await store.reloadDirectory()))}>
                  Restart {harness.name}
                </button>
              )}
              {sheet.may.remove.includes(m.participant_id) && (
                <button type="button" class="small" onClick={() => act(() => store.api!.removeMember(props.spaceId, m.participant_id))}>
                  {m.participant_id === store.me?.id ? "Leave" : "Remove"}
                </button>
              )}
            </li>
          );
        })}
      </ul>
      {!closed && others.length > 0 && (
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault();
            if (adding) void add(adding);
          }}
        >
          <label for="add-member">Add</label>
          <select id="add-member" value={adding} onChange={(e) => (setAdding(e.currentTarget.value), setElsewhere(null))}>
            <option value="">Choose someone…</option>
            {others.map((p) => (
              <option key={p.participant_id} value={p.participant_id}>
                {withEmoji(p, p.name)} ({where(p)})
              </option>
            ))}
          </select>
          <button type="submit" class="primary" disabled={!adding}>
            Add
          </button>
        </form>
      )}
      {"lead_id" in sheet && sheet.kind !== "thread" && <Lead spaceId={props.spaceId} />}
      {elsewhere && <MoveOffer spaceId={props.spaceId} elsewhere={elsewhere} onDone={() => (setElsewhere(null), setAdding(""))} />}
      {sheet.kind !== "thread" && !closed && <NewAgent spaceId={props.spaceId} />}
      {store.features.referee && sheet.kind !== "thread" && <Spend spaceId={props.spaceId} />}
      {store.features.attachments && <RoomFiles spaceId={props.spaceId} />}
    </Modal>
  );
}

/** Who leads the room: one of its agents, or none (docs/product/websocket.md, Who leads; ADR 0090). */
function Lead(props: { spaceId: string }) {
  const store = useStore();
  const sheet = store.rooms.get(props.spaceId)?.sheet;
  const [error, setError] = useState<string | null>(null);
  if (!sheet) return null;
  // An agent in the room, or a harness standing in it as its one agent.
  const agents = sheet.members.filter((m) => m.kind === "agent" || m.kind === "harness");
  if (!agents.length) return null;
  const lead = sheet.lead_id ?? "";
  return (
    <form class="row lead" onSubmit={(e) => e.preventDefault()}>
      <label for="room-lead">Lead</label>
      <select
        id="room-lead"
        value={lead}
        aria-describedby="room-lead-help"
        onChange={async (e) => {
          const chosen = e.currentTarget.value || null;
          setError(null);
          try {
            await store.api!.setLead(props.spaceId, chosen);
          } catch (err) {
            setError((err as Error).message);
          }
        }}
      >
        <option value="">No lead</option>
        {agents.map((m) => (
          <option key={m.participant_id} value={m.participant_id}>
            {withEmoji(store.participants.get(m.participant_id), m.name ?? store.nameOf(m.participant_id))}
          </option>
        ))}
      </select>
      <span id="room-lead-help" class="muted small">
        The lead hands out the work here, and what is nobody's turn goes to it.
      </span>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

/** An agent in another room: move it here, or ask its harness for a copy of it here. */
function MoveOffer(props: { spaceId: string; elsewhere: Elsewhere; onDone: () => void }) {
  const store = useStore();
  const agent = store.participants.get(props.elsewhere.agentId);
  const harness = agent?.harness_id ? store.participants.get(agent.harness_id) : undefined;
  const from = props.elsewhere.spaceId ? store.spaces.get(props.elsewhere.spaceId) : undefined;
  const name = agent?.name ?? store.nameOf(props.elsewhere.agentId);
  const canFork = harness?.capabilities?.includes("forks") && mayAsk(store.me, harness);
  const [error, setError] = useState<string | null>(null);
  const run = async (what: () => Promise<unknown>) => {
    try {
      await what();
      props.onDone();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <div class="offer" role="group" aria-label={`${name} is in another room`} data-testid="move-offer">
      <p>
        {name} is in {from ? store.title(from) : "another room"}: an agent is in one room at a time.
      </p>
      <div class="row">
        <button type="button" class="primary" onClick={() => run(() => store.api!.moveAgent(props.elsewhere.agentId, props.spaceId))}>
          Move {name} here
        </button>
        {canFork && harness && (
          <button type="button" onClick={() => run(() => store.send({ type: "agent.fork", space_id: props.spaceId, agent_id: props.elsewhere.agentId }))}>
            Ask {harness.name} for a copy of {name} here
          </button>
        )}
        <button type="button" onClick={props.onDone}>
          Cancel
        </button>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

/** New: ask a harness that makes new agents for one in this room, named or not. */
function NewAgent(props: { spaceId: string }) {
  const store = useStore();
  const makers = [...store.participants.values()].filter((p) => p.kind === "harness" && p.capabilities?.includes("new_agents") && mayAsk(store.me, p));
  const [harnessId, setHarnessId] = useState("");
  const [name, setName] = useState("");
  const [error, setError] = useState<string | null>(null);
  if (!makers.length) return null;
  const chosen = harnessId || makers[0]!.participant_id;
  return (
    <form
      class="new-agent"
      onSubmit={async (e) => {
        e.preventDefault();
        setError(null);
        const event: Record<string, unknown> = { type: "agent.asked", space_id: props.spaceId, harness_id: chosen };
        if (name.trim()) event["name"] = name.trim();
        try {
          await store.send(event);
          setName("");
        } catch (err) {
          setError((err as Error).message);
        }
      }}
    >
      <h3>New agent</h3>
      <div class="row">
        {makers.length > 1 ? (
          <>
            <label for="new-agent-harness">From</label>
            <select id="new-agent-harness" value={chosen} onChange={(e) => setHarnessId(e.currentTarget.value)}>
              {makers.map((h) => (
                <option key={h.participant_id} value={h.participant_id}>
                  {h.name}
                </option>
              ))}
            </select>
          </>
        ) : (
          <span class="muted small">From {makers[0]!.name}</span>
        )}
        <label for="new-agent-name">Name (optional)</label>
        <input id="new-agent-name" maxLength={80} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <button type="submit" class="primary">
          Ask for a new agent
        </button>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

/** The job's spend against the room's ceiling, and setting the ceiling. */
function Spend(props: { spaceId: string }) {
  const store = useStore();
  const room = store.rooms.get(props.spaceId);
  const spend = room?.spend;
  const [text, setText] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const set = async (usd: number | null) => {
    setError(null);
    setSaved(null);
    try {
      await store.api!.setCeiling(props.spaceId, usd);
      setText("");
      setSaved(usd === null ? "The ceiling is the default again." : `The ceiling is ${dollars(usd)} a job.`);
      store.refreshSpend(props.spaceId);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <section class="spend" aria-labelledby="spend-head">
      <h3 id="spend-head">Spend</h3>
      <p data-testid="spend">{spend ? spendWords(spend) : "Reading what this job has spent…"}</p>
      <form
        class="row"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          const parsed = parseCeiling(text);
          if ("error" in parsed) setError(parsed.error);
          else void set(parsed.usd);
        }}
      >
        <label for="spend-ceiling">Ceiling per job, in dollars</label>
        <input
          id="spend-ceiling"
          inputMode="decimal"
          placeholder={spend ? spend.ceiling_usd.toFixed(2) : "3.00"}
          value={text}
          aria-describedby="spend-ceiling-help"
          aria-invalid={error ? "true" : undefined}
          onInput={(e) => setText(e.currentTarget.value)}
        />
        <button type="submit" class="primary">
          Set the ceiling
        </button>
        <button type="button" onClick={() => void set(null)}>
          Use the default ($3.00)
        </button>
      </form>
      <p id="spend-ceiling-help" class="muted small">
        From $0.25 to $100. At the ceiling Chips holds the agents until a person acts.
      </p>
      {error && (
        <p class="error" role="alert" data-testid="spend-error">
          {error}
        </p>
      )}
      {saved && (
        <p class="small" role="status">
          {saved}
        </p>
      )}
    </section>
  );
}
