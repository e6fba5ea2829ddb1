// What a room shows of its agents and its referee, as pure folds of events (docs/adr/0100):
// an agent's face with its harness, the pause and its banner, a job's spend and its
// ceiling, a person's asks of a harness for an agent and the minute they wait, the quiet
// lines the referee's events draw, and the note under words the referee held.
// docs/product/websocket.md: Agents, Forks, New agents, Restarts, Chips referees…, What the job
// has spent, At the ceiling; docs/product/spaces.md: Several harnesses and people in one space.
import { listWords, moneyWords } from "./lines";
import { plainWords } from "./markdown";
import { lastLine } from "./runs";
import type { AnyEvent, Line, Participant, Run, RunCard } from "./protocol";

/** How long the room waits for a fork's copy or a new agent (FORK_WAIT_MS, NEW_AGENT_WAIT_MS). */
export const ASK_WAIT_MS = 60_000;
/** What a room allows a job unless a person sets another, and the range they may set. */
export const DEFAULT_CEILING_USD = 3;
export const MIN_CEILING_USD = 0.25;
export const MAX_CEILING_USD = 100;

export function dollars(usd: number): string {
  // Below a cent, as many places as show its first figure: $0.002 never reads "$0.00".
  return moneyWords(usd) ?? "$0.00";
}

// --- faces ---------------------------------------------------------------------------------

/**
 * What kind of participant someone is, in words: "person", "harness", "Jacobian agent", or
 * "agent" for an agent named as its harness is (spec: "an agent named as its harness is,
 * like OpenClaw, has none").
 */
export function kindWords(p: Pick<Participant, "kind" | "name"> & { harness?: string | null }): string {
  if (p.kind !== "agent") return p.kind === "harness" ? "harness" : "person";
  return p.harness && p.harness !== p.name ? `${p.harness} agent` : "agent";
}

/** An agent's face as the app draws it: "ASCII Art (Jacobian agent)", "OpenClaw (agent)". */
export function faceLabel(p: Pick<Participant, "kind" | "name"> & { harness?: string | null }): string {
  return p.kind === "agent" ? `${p.name} (${kindWords(p)})` : p.name;
}

/** Where an agent is, for the sheet's Add: "in Alpha", "free", "free, 2 messages wait". */
export function whereWords(p: Pick<Participant, "space_id" | "held">, roomTitle: (id: string) => string | null): string {
  if (p.space_id) {
    const title = roomTitle(p.space_id);
    return title ? `in ${title}` : "in another room";
  }
  const n = p.held ?? 0;
  return n ? `free, ${n === 1 ? "1 message waits" : `${n} messages wait`}` : "free";
}

/** What a harness's face reads beside an agent, or null when there is nothing to say. */
export function statusWords(status: string | null | undefined): string | null {
  switch (status) {
    case "restarting":
      return "Restarting…";
    case "trouble":
      return "In trouble";
    case "disconnected":
      return "Not connected";
    default:
      return null;
  }
}

/** Whether `me` may ask `harness` for an agent: its owner, or a workspace owner or admin. */
export function mayAsk(me: { id: string; role: string } | null, harness: Pick<Participant, "owner_id"> | undefined): boolean {
  if (!me || !harness) return false;
  return harness.owner_id === me.id || me.role === "owner" || me.role === "admin";
}

// --- the pause -----------------------------------------------------------------------------

export interface JobSpend {
  ceiling_usd: number;
  spent_usd: number;
  since_seq: number;
  uncounted_runs: number;
}

export interface Pause {
  why: "person" | "spend";
  /** Who paused them: a person's id, or Chips's. */
  by: string;
  seq: number;
  spend?: JobSpend | null;
}

/**
 * The room's pause after `e`, the door's rule (ADR 0083): `exchange.set` running ends any
 * pause; a person's pause lasts until then and outranks Chips's; Chips's pause at the
 * ceiling ends at the next thing a person does in the room.
 */
export function foldPause(pause: Pause | null, e: AnyEvent): Pause | null {
  const f = e as unknown as Record<string, unknown>;
  if (e.type === "exchange.set") {
    if (f["state"] === "running") return null;
    const why = f["why"] === "spend" ? "spend" : "person";
    if (why === "spend" && pause?.why === "person") return pause;
    return { why, by: e.actor.id, seq: e.seq, spend: (f["spend"] as JobSpend | null | undefined) ?? null };
  }
  if (pause?.why === "spend" && e.actor.kind === "person" && e.seq > pause.seq) return null;
  return pause;
}

/** The banner's words for a paused room. */
export function pauseWords(pause: Pause, nameOf: (id: string) => string): string {
  if (pause.why === "spend") {
    const s = pause.spend;
    const spent = s ? ` This job has spent ${dollars(s.spent_usd)} of the ${dollars(s.ceiling_usd)} this room allows a job.` : "";
    return `Chips paused the agents here at the spend ceiling.${spent} What they say to each other waits until a person acts.`;
  }
  return `${nameOf(pause.by)} paused the agents here. What they say to each other waits until someone lets them carry on.`;
}

// --- the ceiling ---------------------------------------------------------------------------

/** A ceiling typed by a person: dollars within range, or the sentence saying what is wrong. */
export function parseCeiling(text: string): { usd: number } | { error: string } {
  const cleaned = text.trim().replace(/^\$/, "").replace(/,/g, "");
  if (!cleaned) return { error: "Say how many dollars, from $0.25 to $100." };
  if (!/^\d*\.?\d+$/.test(cleaned)) return { error: `“${text.trim()}” is not an amount of dollars.` };
  const usd = Number(cleaned);
  if (usd < MIN_CEILING_USD || usd > MAX_CEILING_USD) {
    return { error: `A room's spend ceiling is from $0.25 to $100; ${dollars(usd)} is out of range.` };
  }
  return { usd: Math.round(usd * 100) / 100 };
}

/** The sheet's words for a job's spend. */
export function spendWords(s: JobSpend): string {
  const share = s.ceiling_usd > 0 ? Math.min(100, Math.round((s.spent_usd / s.ceiling_usd) * 100)) : 0;
  let out = `This job has spent ${dollars(s.spent_usd)} of the ${dollars(s.ceiling_usd)} this room allows a job (${share}%).`;
  if (s.uncounted_runs) out += ` ${s.uncounted_runs === 1 ? "1 run" : `${s.uncounted_runs} runs`} reported no cost and ${s.uncounted_runs === 1 ? "counts" : "count"} nothing.`;
  return out;
}

// --- asks of a harness for an agent --------------------------------------------------------

export interface Ask {
  /** The ask's event id: a copy names it as fork_of, a new agent as made_for. */
  id: string;
  kind: "fork" | "new";
  seq: number;
  ts: string;
  by: string;
  harness_id: string;
  /** The agent to copy (a fork). */
  agent_id?: string;
  /** What the new agent is to be called (the door fills it in). */
  name?: string | null;
  /** The agent that came of it, once one joined. */
  answered_by?: string;
}

/** An ask from an `agent.fork` or `agent.asked` event, or null. */
export function askOf(e: AnyEvent): Ask | null {
  const f = e as unknown as Record<string, unknown>;
  if (e.type !== "agent.fork" && e.type !== "agent.asked") return null;
  const ask: Ask = {
    id: e.id,
    kind: e.type === "agent.fork" ? "fork" : "new",
    seq: e.seq,
    ts: e.ts,
    by: e.actor.id,
    harness_id: String(f["harness_id"] ?? ""),
  };
  if (typeof f["agent_id"] === "string") ask.agent_id = f["agent_id"];
  if (typeof f["name"] === "string") ask.name = f["name"];
  return ask;
}

/** The ask an `agent.attached` answers (its fork_of or made_for), if any. */
export function answeredAsk(e: AnyEvent): { ask: string; agent: string } | null {
  if (e.type !== "agent.attached") return null;
  const f = e as unknown as Record<string, unknown>;
  const ask = (f["fork_of"] as string | null | undefined) ?? (f["made_for"] as string | null | undefined);
  return ask ? { ask, agent: String(f["agent_id"]) } : null;
}

export type AskState = "waiting" | "made" | "missed";

export function askState(ask: Ask, now: number): AskState {
  if (ask.answered_by) return "made";
  return now - Date.parse(ask.ts) >= ASK_WAIT_MS ? "missed" : "waiting";
}

/** The quiet line an ask draws, as it stands at `now`. */
export function askWords(ask: Ask, now: number, nameOf: (id: string) => string): string {
  const harness = nameOf(ask.harness_id);
  const what = ask.kind === "fork" ? `a copy of ${nameOf(ask.agent_id ?? "")}` : ask.name ? `a new agent called ${ask.name}` : "a new agent";
  const asked = `${nameOf(ask.by)} asked ${harness} for ${what} here`;
  switch (askState(ask, now)) {
    case "made":
      return `${asked}: ${nameOf(ask.answered_by!)} joined.`;
    case "missed":
      return `${asked}. ${harness} didn't make ${ask.kind === "fork" ? "the copy" : "the agent"}: the room stopped waiting after a minute.`;
    default: {
      const left = Math.max(1, Math.ceil((Date.parse(ask.ts) + ASK_WAIT_MS - now) / 1000));
      return `${asked}. Waiting for ${harness} (${left} s)…`;
    }
  }
}

// --- the quiet lines of the referee's events -----------------------------------------------

/** The quiet line a referee or agent event draws in its room, or null. */
export function refereeWords(e: AnyEvent, nameOf: (id: string) => string): string | null {
  const f = e as unknown as Record<string, unknown>;
  const who = e.actor.kind === "system" || e.actor.kind === "operator" ? "Chips" : nameOf(e.actor.id);
  switch (e.type) {
    case "exchange.set": {
      if (f["state"] === "running") return `${who} let the agents carry on`;
      const spend = f["spend"] as JobSpend | null | undefined;
      if (f["why"] === "spend") {
        return `Chips paused the agents: this job reached the ${dollars(spend?.ceiling_usd ?? DEFAULT_CEILING_USD)} this room allows a job`;
      }
      return `${who} paused the agents`;
    }
    case "budget.warning": {
      if (f["action"] === "pause") return null; // the pause before it said so
      const budget = f["budget"] as { limit_usd: number; spent_usd: number } | undefined;
      if (!budget) return null;
      if (f["scope"] === "harness") return `A harness's own budget is ${f["threshold"]}% spent: ${dollars(budget.spent_usd)} of ${dollars(budget.limit_usd)}`;
      return `This job has spent ${dollars(budget.spent_usd)} of the ${dollars(budget.limit_usd)} this room allows a job`;
    }
    case "space.spend_ceiling_set": {
      const usd = f["usd"] as number | null | undefined;
      return usd == null
        ? `${who} set this room's spend ceiling back to the default, ${dollars(DEFAULT_CEILING_USD)} a job`
        : `${who} set this room's spend ceiling to ${dollars(usd)} a job`;
    }
    case "agent.released": {
      if (f["reason"] !== "moved") return null; // its membership.removed says so
      return `${nameOf(String(f["agent_id"]))} moved to another room`;
    }
    default:
      return null;
  }
}

export const REFEREE_LINE_TYPES = new Set(["exchange.set", "budget.warning", "space.spend_ceiling_set", "agent.released"]);

// --- words the referee held ----------------------------------------------------------------

/**
 * The note under the last of each stretch of held words (docs/product/spaces.md: "Scout and Ledger
 * have sent each other 4 messages. They'll pick up when you say something."), keyed by line
 * id. Once a person has spoken after it, it says their words let the agents go on.
 */
export function heldNotes(lines: Line[], isPerson: (id: string) => boolean, nameOf: (id: string) => string): Map<string, string> {
  const out = new Map<string, string>();
  let stretch: Line[] = [];
  const close = (after: Line | null) => {
    const last = stretch[stretch.length - 1];
    if (!last) return;
    const ids: string[] = [];
    for (const l of stretch) for (const id of [l.author_id, ...(l.held_for ?? [])]) if (!ids.includes(id)) ids.push(id);
    const count = last.exchange?.count ?? stretch.length;
    const names = listWords(ids.map(nameOf));
    const said = ids.length > 1 ? `${names} have sent each other ${count} messages.` : `${names} has sent ${count} messages to agents here.`;
    out.set(last.id, after ? `${said} ${nameOf(after.author_id)}'s message let them go on.` : `${said} They'll pick up when you say something.`);
    stretch = [];
  };
  for (const line of lines) {
    if (line.kind === "system" || line.deleted) continue;
    if (line.held) stretch.push(line);
    else if (isPerson(line.author_id)) close(line);
  }
  close(null);
  return out;
}

// --- what agents say to each other, folded ------------------------------------------------

/** Whether a line is an agent's words to another agent (as Chips addressed it, or as it was
 * held for), which the room folds; what an agent says to the room stays in the flow. */
export function isAgentTalk(line: Line, isAgent: (id: string) => boolean): boolean {
  if (line.kind === "system" || line.deleted || !isAgent(line.author_id)) return false;
  const to = [...(line.addressed_to ?? []), ...(line.held_for ?? [])];
  return to.some((id) => id !== line.author_id && isAgent(id));
}

export interface TalkFold {
  /** The lines folded, oldest first. */
  lines: Line[];
  /** Who talks in it: each author and agent addressed, in the order they first appear. */
  faces: string[];
}

/**
 * The room's folds (docs/product/spaces.md: "Harness-to-harness traffic is folded … one row — their
 * faces with a two-way arrow, the count, and the latest line — open on a tap, never
 * deleted"): each stretch of two or more agents' words to agents with nothing else drawn
 * between them, keyed by its first line's id. ``entries`` is what the room draws, in order;
 * ``null`` is anything drawn that is not a line (a run, an ask, a card), which ends a stretch.
 */
export function talkFolds(entries: (Line | null)[], isAgent: (id: string) => boolean): Map<string, TalkFold> {
  const out = new Map<string, TalkFold>();
  let stretch: Line[] = [];
  const close = () => {
    if (stretch.length >= 2) {
      const faces: string[] = [];
      for (const l of stretch) {
        for (const id of [l.author_id, ...(l.addressed_to ?? []), ...(l.held_for ?? [])]) {
          if (isAgent(id) && !faces.includes(id)) faces.push(id);
        }
      }
      out.set(stretch[0]!.id, { lines: stretch, faces });
    }
    stretch = [];
  };
  for (const entry of entries) {
    if (entry && isAgentTalk(entry, isAgent)) stretch.push(entry);
    else close();
  }
  close();
  return out;
}

/** What a fold's row says beside its faces: the count and the latest line. */
export function foldWords(fold: TalkFold, nameOf: (id: string) => string): { names: string; count: string; latest: string } {
  const latest = fold.lines[fold.lines.length - 1]!;
  const text = (latest.text ?? "").replace(/\s+/g, " ").trim();
  return {
    names: fold.faces.map(nameOf).join(" ⇄ "),
    count: `${fold.lines.length} messages`,
    latest: `${nameOf(latest.author_id)}: ${text.length > 120 ? `${text.slice(0, 119)}…` : text}`,
  };
}

// --- who leads, and who is working ---------------------------------------------------------

export interface Turn {
  agent_id: string;
  run_id: string;
  since: string;
  heard_at: string;
  last_step?: string | null;
}

/** The room's turns going, from `room.working` and `room.idle` (ADR 0090); [] when idle. */
export function foldWork(work: Turn[], e: AnyEvent): Turn[] {
  const f = e as unknown as Record<string, unknown>;
  if (e.type === "room.working") return (f["working"] as Turn[] | undefined) ?? [];
  if (e.type === "room.idle") return [];
  return work;
}

function minutesIn(since: string, now: number): string {
  const minutes = Math.floor((now - Date.parse(since)) / 60_000);
  return minutes < 1 ? "less than a minute in" : minutes === 1 ? "1 minute in" : `${minutes} minutes in`;
}

/** A run not finished, as the room's "Working now" tells it: whose, and what it waits on. */
export interface Going {
  run_id: string;
  /** The agent whose turn it is, or the harness for its own run. */
  by: string;
  paused: boolean;
  /** The card it waits on, when one is still open. */
  waiting: "approval" | "question" | null;
}

/** The room's runs not finished (running or paused), with the open card each waits on. */
export function goingRuns(
  runs: Iterable<Pick<Run, "run_id" | "harness_id" | "agent_id" | "state">>,
  cards: Iterable<Pick<RunCard, "kind" | "run_id" | "answered_seq">>,
): Going[] {
  const open = new Map<string, "approval" | "question">();
  for (const c of cards) if (c.answered_seq === null && !open.has(c.run_id)) open.set(c.run_id, c.kind === "approval" ? "approval" : "question");
  return [...runs]
    .filter((r) => r.state === "running" || r.state === "paused")
    .map((r) => ({ run_id: r.run_id, by: r.agent_id ?? r.harness_id, paused: r.state === "paused", waiting: open.get(r.run_id) ?? null }));
}

function waitWords(going: Going[]): string | null {
  const kinds = new Set(going.map((g) => g.waiting).filter((w) => w !== null));
  if (kinds.size > 1) return "waiting on an answer";
  if (kinds.has("approval")) return "waiting on an approval";
  if (kinds.has("question")) return "waiting on a question";
  return null;
}

/** One entry of "Working now": an agent (or a harness), with every run of its not finished. */
export interface Working {
  who: string;
  /** "Scout", or "Scout · 4 runs": the chip that opens the list of its runs when more than one. */
  label: string;
  /** What follows it: ", 2 minutes in (last step: Editing ascii-alphabet.html)". */
  rest: string;
  /** Its runs, each once: the turns' first, then the runs going. */
  runs: string[];
}

/**
 * "Working now", one entry an agent however many runs it has going: the turns the referee
 * tells of (room.working), and every run not finished besides: a run waiting on an approval
 * or a question, or gone quiet, still stands here until it ends ("Scout · 2 runs, waiting on
 * an approval"). Minutes are since its oldest turn, the last step its newest turn's.
 */
export function workingNow(work: Turn[], nameOf: (id: string) => string, now: number, runs: Going[] = []): Working[] {
  const byAgent = new Map<string, { turns: Turn[]; going: Going[] }>();
  const entry = (who: string) => byAgent.get(who) ?? byAgent.set(who, { turns: [], going: [] }).get(who)!;
  for (const t of work) entry(t.agent_id).turns.push(t);
  for (const g of runs) entry(g.by).going.push(g);
  return [...byAgent.entries()].map(([who, { turns, going }]) => {
    const ids = [...new Set([...turns.map((t) => t.run_id), ...going.map((g) => g.run_id)])];
    const label = `${nameOf(who)}${ids.length > 1 ? ` · ${ids.length} runs` : ""}`;
    const wait = waitWords(going);
    if (!turns.length) {
      const how = wait ?? (going.every((g) => g.paused) ? "paused" : "still going");
      return { who, label, rest: `, ${how}`, runs: ids };
    }
    const oldest = turns.reduce((a, b) => (Date.parse(b.since) < Date.parse(a.since) ? b : a));
    const newest = turns.reduce((a, b) => (Date.parse(b.since) >= Date.parse(a.since) ? b : a));
    const step = newest.last_step ? ` (last step: ${newest.last_step})` : "";
    return { who, label, rest: `, ${minutesIn(oldest.since, now)}${wait ? `, ${wait}` : ""}${step}`, runs: ids };
  });
}

/** "Working now: Scout, 2 minutes in (last step: Editing ascii-alphabet.html)", or null. */
export function workingWords(work: Turn[], nameOf: (id: string) => string, now: number, runs: Going[] = []): string | null {
  const each = workingNow(work, nameOf, now, runs);
  return each.length ? `Working now: ${each.map((w) => w.label + w.rest).join("; ")}` : null;
}

/** A row of the list a "Working now" chip opens: a run, by its goal, and how it stands. */
export interface WorkingRun {
  run_id: string;
  goal: string;
  how: string;
}

/** The longest goal a row of that list says; a longer one is cut at a word. */
const GOAL_MAX = 80;

/**
 * The list a chip of several runs opens, oldest run first: each by its goal in plain words
 * (cut to 80 characters) and how it stands: waiting on an approval or a question, paused,
 * or running. A turn whose run the room has not read yet is "A run", running.
 */
export function workingRuns(ids: string[], runs: ReadonlyMap<string, Pick<Run, "run_id" | "goal" | "started_seq">>, going: Going[]): WorkingRun[] {
  const seqOf = (id: string) => runs.get(id)?.started_seq ?? Number.MAX_SAFE_INTEGER;
  return [...ids]
    .sort((a, b) => seqOf(a) - seqOf(b))
    .map((run_id) => {
      const g = going.find((x) => x.run_id === run_id);
      const how = g?.waiting ? `waiting on ${g.waiting === "approval" ? "an approval" : "a question"}` : g?.paused ? "paused" : "running";
      const goal = lastLine(plainWords(runs.get(run_id)?.goal ?? "").replace(/\s+/g, " "), GOAL_MAX);
      return { run_id, goal: goal || "A run", how };
    });
}
