// What the app offers is what the gateway says the reader may do: the room sheet's `may`
// (GET /v1/spaces/:id), asked of the very rules the door decides each act by (ADR 0142).
// Nothing here decides who may do what; it only reads that answer, and words what a card
// shows instead of buttons. An act the door would refuse is left out rather than offered
// and refused; the one thing said instead is a locked room's lock.
import { listWords } from "./lines";
import type { Run, RunCard, Sheet } from "./protocol";
import type { Schemas } from "./gen/api";

export type RoomMay = Schemas["RoomMay"];
export type CardMay = Schemas["CardMay"];

/** The muted line the menu shows for a locked room (not a thread), or null: who may
 * unlock it is the `may` answer's. */
export function lockedNote(sheet: Sheet | null | undefined, may: RoomMay | null): string | null {
  if (!sheet || !sheet.locked || sheet.kind === "thread") return null;
  return may?.unlock ? "Changes are locked." : "Changes are locked; the room's owner or an admin can unlock them.";
}

/** What a line's menu offers. */
export interface LineActs {
  reply: boolean;
  pin: boolean;
  edit: boolean;
  hideForMe: boolean;
  deleteForEveryone: boolean;
}

/**
 * What a line's menu offers this person: a message taken back takes nothing more but
 * Delete for me; their own message they edit (words only) and take back; somebody else's
 * they take back and any they pin as `may` says; Reply and Edit go through the composer,
 * which an archived room does not show. Not in the room (no `may` yet): nothing.
 */
export function lineActs(line: { author_id: string; kind: string; deleted: boolean }, meId: string | null | undefined, may: RoomMay | null, closed: boolean): LineActs {
  const none: LineActs = { reply: false, pin: false, edit: false, hideForMe: false, deleteForEveryone: false };
  if (!may || !meId) return none;
  if (line.deleted) return { ...none, hideForMe: true };
  const mine = line.author_id === meId;
  return {
    reply: !closed,
    pin: may.pin,
    edit: mine && line.kind === "text" && !closed,
    hideForMe: true,
    deleteForEveryone: mine || may.take_back,
  };
}

/**
 * Where a card stands for this person: `answered` once somebody answered it (the card
 * says who); else as `may` says it (`open`: theirs to answer now; `theirs`: somebody
 * else's, `deciders` say whose; `expired`; `ended`: the run that asked ended first);
 * `waiting` while the sheet has not read it yet (a card just asked).
 */
export type CardState = { state: "answered" } | { state: "waiting" } | { state: "open" | "expired" | "ended" } | { state: "theirs"; deciders: string[] };

export function cardState(card: RunCard, may: RoomMay | null): CardState {
  if (card.answered_seq !== null) return { state: "answered" };
  const said = may?.cards.find((c) => c.id === card.id && c.kind === card.kind);
  if (!said) return { state: "waiting" };
  if (said.state === "theirs") return { state: "theirs", deciders: said.deciders };
  return { state: said.state };
}

/** How long until an approval expires, to ask the sheet again then; null when nothing
 * will change on the clock (a question's expiry Chips logs, which the room hears). */
export function msUntilExpiry(card: RunCard, now: number): number | null {
  if (card.kind !== "approval" || card.answered_seq !== null || card.expires_at === null) return null;
  const ms = Date.parse(card.expires_at) - now;
  return ms > 0 ? ms : null;
}

/** The harness whose run asked: the card's own, else the run's. */
export function harnessOf(card: RunCard, run: Run | undefined): string {
  return card.harness_id ?? run?.harness_id ?? "";
}

/** The line a card shows to somebody it is not for: who decides it, as `may` names them
 * (the harness's owner first). */
export function decidesWords(card: RunCard, deciders: readonly string[], harnessName: string | null, nameOf: (id: string) => string): string {
  if (card.kind === "question") return "For the people in this room to answer.";
  const names = deciders.length ? deciders.map(nameOf) : [harnessName ? `${harnessName}’s owner` : "the harness’s owner"];
  return `For ${listWords(names, "or")} to decide.`;
}

/** What a card says once it is past answering. */
export function closedWords(card: RunCard, state: "expired" | "ended"): string {
  if (state === "expired") return "Expired: Chips stopped waiting.";
  return card.kind === "approval" ? "The run ended before anyone decided." : "The run ended before anyone answered.";
}

/** The risk an approval names, or null: a run's approval.request need not name one, and
 * none given is none shown (not a guessed "medium"; docs/product/jacobian-channel.md). */
export function riskWord(card: RunCard): string | null {
  const risk = card.card["risk"];
  return typeof risk === "string" && risk.trim() ? risk.trim() : null;
}

/** A rule of the dial as an approval carries it (ADR 0130). */
interface DialRule {
  action: string;
  args?: string;
  effect: string;
}

/**
 * The line an answered approval shows: who decided, or, when the dial decided on its own
 * (by `system`, ADR 0130), the owner's rule that did it ("Allowed by your rule …") or the
 * level alone. `mine` says whether this person owns the harness, to say "your rule".
 */
export function decidedWords(answer: Record<string, unknown>, by: string, answeredBy: string | null, mine: boolean): string {
  const decision = String(answer["decision"] ?? "");
  if (answeredBy !== "system") {
    const said = decision === "approve" ? "Approved" : decision === "deny" ? "Denied" : decision === "edit" ? "Approved as edited" : "Decided";
    return `${said} by ${by}${answer["edited"] ? `: ${String(answer["edited"])}` : ""}`;
  }
  const verb = decision === "approve" ? "Allowed" : "Denied";
  const rule = answer["rule"] as DialRule | undefined;
  const level = typeof answer["autonomy"] === "string" ? answer["autonomy"] : "";
  if (!rule) return `${verb} by Chips: the autonomy dial is at ${level}`;
  const args = rule.args !== undefined ? ` ${rule.args}` : "";
  return `${verb} by ${mine ? "your" : "the owner’s"} rule: ${rule.effect} ${rule.action}${args} (${level})`;
}

/** The line an expired question shows: the sentence Chips logged with it (ADR 0131). */
export function expiredWords(answer: Record<string, unknown>): string | null {
  return typeof answer["note"] === "string" && answer["expired"] === true ? answer["note"] : null;
}
