// What a run's approval or question card offers this person, as the door decides an answer
// (eventlog rules/runs.py, check_answer and check_decider; spec/websocket.md, First answer
// wins): an approval is the harness's owner's or one of the people the card names, a
// question anybody's in the room; neither is answerable once answered or once the run that
// asked it has ended, and an approval not after its expires_at. A card that is not this
// person's says who decides instead of offering buttons the door would refuse. Pure, so
// each door rule is a unit test (asks.test.ts).
import { listWords } from "./lines";
import type { Participant, Run, RunCard } from "./protocol";

/** A run that takes an answer is running or paused (eventlog state.py, LIVE). */
const LIVE = ["running", "paused"];

/**
 * Where a card stands for this person:
 * - `answered`: somebody answered it (the card says who);
 * - `expired`: an approval past its expires_at (Chips stopped waiting);
 * - `ended`: the run that asked it ended first;
 * - `theirs`: still open, but not this person's to answer (`deciders` say whose it is);
 * - `open`: this person may answer it now.
 */
export type CardState =
  | { state: "answered" }
  | { state: "expired" }
  | { state: "ended" }
  | { state: "theirs"; deciders: string[] }
  | { state: "open" };

/** What the rules read besides the card: the person, whether they are in the room, the
 * directory and the clock. */
export interface Viewer {
  me: string | null;
  inRoom: boolean;
  participants: Map<string, Participant>;
  now: number;
}

/** The harness whose run asked: the card's own (the read model's), else the run's; an
 * agent stands for its harness (ADR 0070), as the door's harness_of does. */
export function harnessOf(card: RunCard, run: Run | undefined, participants: Map<string, Participant>): string {
  const id = card.harness_id ?? run?.harness_id ?? "";
  const p = participants.get(id);
  return p?.kind === "agent" ? (p.harness_id ?? p.owner_id ?? id) : id;
}

/** The people the card names as its answerers (approval.request's `answerers`). */
export function answerersOf(card: RunCard): string[] {
  const named = card.card["answerers"];
  return Array.isArray(named) ? named.filter((a): a is string => typeof a === "string") : [];
}

/** Who may decide an approval: the harness's owner (null when the directory does not say),
 * then the people the card names. */
export function decidersOf(card: RunCard, harness: string, participants: Map<string, Participant>): { owner: string | null; named: string[] } {
  const owner = participants.get(harness)?.owner_id ?? null;
  return { owner, named: answerersOf(card).filter((a) => a !== owner) };
}

/** Whether an approval's expires_at has come (the door refuses at the instant itself). */
export function isExpired(card: RunCard, now: number): boolean {
  return card.kind === "approval" && card.expires_at !== null && Date.parse(card.expires_at) <= now;
}

/** How long until an approval expires, to redraw the card then; null when nothing will
 * change on the clock (a question, an answered card, no expiry, or expired already). */
export function msUntilExpiry(card: RunCard, now: number): number | null {
  if (card.kind !== "approval" || card.answered_seq !== null || card.expires_at === null) return null;
  const ms = Date.parse(card.expires_at) - now;
  return ms > 0 ? ms : null;
}

/** Where the card stands for this person (see CardState). A run the room has not read is
 * taken as live, as the door takes a run it does not know. */
export function cardState(card: RunCard, run: Run | undefined, viewer: Viewer): CardState {
  if (card.answered_seq !== null) return { state: "answered" };
  if (isExpired(card, viewer.now)) return { state: "expired" };
  if (run && !LIVE.includes(run.state)) return { state: "ended" };
  if (card.kind === "question") return viewer.inRoom ? { state: "open" } : { state: "theirs", deciders: [] };
  const { owner, named } = decidersOf(card, harnessOf(card, run, viewer.participants), viewer.participants);
  const mine = viewer.me !== null && (viewer.me === owner || named.includes(viewer.me));
  if (mine && viewer.inRoom) return { state: "open" };
  return { state: "theirs", deciders: [...(owner ? [owner] : []), ...named] };
}

/**
 * The line a card shows to somebody it is not for: who decides it. The owner comes first;
 * an owner the directory does not name is said as the harness's owner.
 */
export function decidesWords(card: RunCard, run: Run | undefined, participants: Map<string, Participant>, nameOf: (id: string) => string): string {
  if (card.kind === "question") return "For the people in this room to answer.";
  const harness = harnessOf(card, run, participants);
  const { owner, named } = decidersOf(card, harness, participants);
  const known = participants.get(harness)?.name;
  const names = [owner ? nameOf(owner) : known ? `${known}’s owner` : "the harness’s owner", ...named.map(nameOf)];
  return `For ${listWords(names, "or")} to decide.`;
}

/** What a card says once it is past answering. */
export function closedWords(card: RunCard, state: "expired" | "ended"): string {
  if (state === "expired") return "Expired: Chips stopped waiting.";
  return card.kind === "approval" ? "The run ended before anyone decided." : "The run ended before anyone answered.";
}

/** The risk an approval names, or null: a run's approval.request need not name one, and
 * none given is none shown (not a guessed "medium"; spec/jacobian-channel.md). */
export function riskWord(card: RunCard): string | null {
  const risk = card.card["risk"];
  return typeof risk === "string" && risk.trim() ? risk.trim() : null;
}
