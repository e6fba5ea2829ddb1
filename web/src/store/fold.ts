// What the socket's events draw in a room that is read, as functions over the room (beside
// lines.ts, which says what a line is): what the room draws beside its lines, and its runs
// and cards. The store calls them for each event in seq order (events.ts), and for the
// events a page of lines is read with (rooms.ts).
import { answeredAsk, askOf, foldPause, foldWork, refereeWords, REFEREE_LINE_TYPES } from "../agents";
import { insertLine } from "../lines";
import type { AnyEvent, Run } from "../protocol";
import { runnerOf } from "../runs";
import type { Room } from "./base";

// What an answer records on its card, as the projector keeps it (rules.py, answer_of):
// the dial's rule and level too (ADR 0130), and what an expiry took (ADR 0131).
const ANSWER_FIELDS = ["decision", "edited", "note", "value", "values", "text", "rule", "autonomy", "default_taken"];

/**
 * What the room draws beside its lines (docs/adr/0100): the pause, a person's asks of a
 * harness and the agents that answered them, and the quiet lines of the referee's events.
 * The same for an event read back with a page of lines as for one live.
 */
export function foldBeside(room: Room, e: AnyEvent, nameOf: (id: string) => string): void {
  room.work = foldWork(room.work, e);
  const pause = foldPause(room.pause, e);
  if (pause !== room.pause && !(pause && room.pause && pause.seq < room.pause.seq)) room.pause = pause;
  const ask = askOf(e);
  if (ask && !room.asks.has(ask.id)) room.asks = new Map(room.asks).set(ask.id, ask);
  const answered = answeredAsk(e);
  if (answered) {
    const asked = room.asks.get(answered.ask);
    if (asked && !asked.answered_by) room.asks = new Map(room.asks).set(asked.id, { ...asked, answered_by: answered.agent });
  }
  if (REFEREE_LINE_TYPES.has(e.type)) {
    const words = refereeWords(e, nameOf);
    const id = `note_${e.id}`;
    if (words && !room.lines.some((l) => l.id === id)) {
      room.lines = insertLine(room.lines, {
        id,
        seq: e.seq,
        kind: "system",
        author_id: e.actor.id,
        text: words,
        reply_to: null,
        ts: e.ts,
        edited: false,
        deleted: false,
        pinned: false,
        feedback: [],
        drawn: e,
      });
    }
  }
}

/** The room's runs and cards as a run's events change them; `meId` says whether an answer came from elsewhere. */
export function foldRun(room: Room, e: AnyEvent, meId: string | null): void {
  const f = e as unknown as Record<string, unknown>;
  const runId = f["run_id"] as string | undefined;
  if (e.type === "run.started" && runId) {
    room.runs.set(runId, {
      run_id: runId,
      space_id: room.id,
      ...runnerOf(e.actor),
      goal: String(f["goal"] ?? ""),
      state: "running",
      status: { phase: null, verb: null, progress: null, text: null },
      summary: null,
      why: null,
      started_seq: e.seq,
      steps: [],
      cards: [],
    });
    room.runs = new Map(room.runs);
    return;
  }
  if (e.type === "approval.request" || e.type === "question.ask") {
    const kind = e.type === "approval.request" ? "approval" : "question";
    const id = String(f[`${kind}_id`]);
    const { v: _v, workspace_id: _w, ...body } = f;
    room.cards.set(id, {
      kind,
      id,
      run_id: String(runId),
      space_id: room.id,
      harness_id: e.actor.harness_id ?? e.actor.id,
      asked_seq: e.seq,
      expires_at: (f["expires_at"] as string | null | undefined) ?? null,
      card: body,
      answered_by: null,
      answer: null,
      answered_seq: null,
    });
    room.cards = new Map(room.cards);
    return;
  }
  if (e.type === "approval.resolved" || e.type === "question.answered" || e.type === "question.expired") {
    const kind = e.type === "approval.resolved" ? "approval" : "question";
    const card = room.cards.get(String(f[`${kind}_id`]));
    if (card && card.answered_seq === null) {
      const answer: Record<string, unknown> = {};
      for (const k of ANSWER_FIELDS) if (f[k] != null) answer[k] = f[k];
      if (e.type === "question.expired") answer["expired"] = true;
      room.cards.set(card.id, {
        ...card,
        answered_by: e.actor.id,
        answer,
        answered_seq: e.seq,
        elsewhere: f["resolved_elsewhere"] === true || e.actor.id !== meId,
      });
      room.cards = new Map(room.cards);
    }
    return;
  }
  if (!runId) return;
  const run = room.runs.get(runId);
  if (!run) return;
  const next: Run = { ...run, status: { ...run.status }, steps: [...(run.steps ?? [])] };
  switch (e.type) {
    case "run.status":
      next.status = {
        phase: (f["phase"] as string | null) ?? null,
        verb: (f["verb"] as string | null) ?? null,
        progress: (f["progress"] as number | null) ?? null,
        text: (f["text"] as string | null) ?? null,
      };
      break;
    case "step.log": {
      const stepId = String(f["step_id"]);
      const old = next.steps!.find((s) => s.step_id === stepId);
      const step = {
        step_id: stepId,
        status: f["status"] as "started" | "done" | "failed",
        title: (f["title"] as string | null) ?? old?.title ?? null,
        summary: (f["summary"] as string | null) ?? old?.summary ?? null,
        started_seq: old?.started_seq ?? e.seq,
      };
      next.steps = old ? next.steps!.map((s) => (s.step_id === stepId ? step : s)) : [...next.steps!, step];
      break;
    }
    case "run.paused":
      next.state = "paused";
      break;
    case "run.resumed":
      next.state = "running";
      break;
    case "run.completed":
      next.state = "completed";
      next.summary = (f["summary"] as string | null) ?? null;
      break;
    case "run.failed":
      next.state = "failed";
      next.why = (f["why"] as string | null) ?? null;
      break;
    case "run.cancel":
      next.state = "cancelled";
      break;
    case "usage": {
      const u = next.usage ?? { tokens_in: 0, tokens_out: 0, cost_usd: 0 };
      next.usage = {
        tokens_in: u.tokens_in + Number(f["tokens_in"] ?? 0),
        tokens_out: u.tokens_out + Number(f["tokens_out"] ?? 0),
        cost_usd: u.cost_usd + Number(f["cost_usd"] ?? 0),
      };
      break;
    }
    default:
      return;
  }
  room.runs.set(runId, next);
  room.runs = new Map(room.runs);
}
