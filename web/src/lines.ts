// Pure folds of events into what a room shows; the same words the server's read model
// draws (chips_common.rules.lines.system_line, docs/adr/0006), so a live line and a
// reloaded one read alike.
import { foldHeard, type LinkedFile } from "./files";
import { plainWords } from "./markdown";
import type { AnyEvent, FeedbackItem, Line } from "./protocol";

export const LINE_TYPES = new Set(["membership.added", "membership.removed", "space.updated", "space.lock_set", "space.lead_set", "lead.handed"]);
export const CARD_KINDS = new Set(["status", "approval", "question", "receipt", "artifact", "task", "handoff", "checkpoint", "summary"]);

/** Names said as a list: "A", "A and B", "A, B and C" (or "… or C"). */
export function listWords(names: readonly string[], last: "and" | "or" = "and"): string {
  if (names.length <= 1) return names[0] ?? "";
  return `${names.slice(0, -1).join(", ")} ${last} ${names[names.length - 1]}`;
}

/**
 * A cost in dollars as a person reads it: cents from a cent up ("$1.25"), and below a
 * cent as many places as it takes to show its first figure ("$0.002", "$0.0004"), so a
 * cheap run never reads "$0.00". Null when there is no number.
 */
export function moneyWords(usd: unknown): string | null {
  if (typeof usd !== "number" || !Number.isFinite(usd)) return null;
  if (usd === 0 || Math.abs(usd) >= 0.01) return `$${usd.toFixed(2)}`;
  const places = Math.min(6, Math.max(3, 1 - Math.floor(Math.log10(Math.abs(usd)))));
  const shown = usd.toFixed(places).replace(/0+$/, "");
  return shown === "0." || shown === "-0." ? "under $0.000001" : `$${shown}`;
}

export const THREAD_NAME_WORDS = 6;
export const THREAD_NAME_MAX = 40;

/**
 * What a thread without a title of its own is called wherever it is listed or headed: the
 * first words of the message it was opened on, without their markup ("Which day do we
 * launch?", "Can you check the totals in…"), or "Thread in <room>" when that message was
 * taken back or says nothing in words.
 */
export function threadName(rootText: string | null | undefined, roomTitle: string | null): string {
  const words = plainWords(rootText ?? "").split(/\s+/).filter(Boolean);
  if (!words.length) return `Thread in ${roomTitle ?? "a room"}`;
  let name = "";
  let cut = false;
  for (const [i, word] of words.entries()) {
    const next = name ? `${name} ${word}` : word;
    if (i >= THREAD_NAME_WORDS || next.length > THREAD_NAME_MAX) {
      cut = true;
      break;
    }
    name = next;
  }
  if (!name) name = words[0]!.slice(0, THREAD_NAME_MAX - 1);
  return cut ? `${name.replace(/[,;:.–—-]+$/, "")}…` : name;
}

/** The muted line a room operation draws, or null. */
export function systemLine(e: AnyEvent, nameOf: (id: string) => string): string | null {
  if (!LINE_TYPES.has(e.type)) return null;
  const f = e as unknown as Record<string, unknown>;
  const who = e.actor.kind === "system" || e.actor.kind === "operator" ? "Chips" : nameOf(e.actor.id);
  // A harness in or out only behind its agents draws no line (docs/adr/0070).
  if ((e.type === "membership.added" || e.type === "membership.removed") && f["standing"] === "agents") return null;
  if (e.type === "membership.added") {
    return f["participant_id"] === e.actor.id ? `${who} joined` : `${who} added ${nameOf(String(f["participant_id"]))}`;
  }
  if (e.type === "membership.removed") {
    return f["participant_id"] === e.actor.id ? `${who} left` : `${who} removed ${nameOf(String(f["participant_id"]))}`;
  }
  if (e.type === "lead.handed") {
    // One quiet line under the words (docs/product/websocket.md, Who leads; docs/adr/0090).
    return `${nameOf(String(f["agent_id"]))} took it as the lead: it was nobody’s turn`;
  }
  if (e.type === "space.lead_set") {
    const lead = f["agent_id"] as string | null | undefined;
    return lead ? `${who} made ${nameOf(lead)} the room’s lead` : `${who} left the room without a lead`;
  }
  if (e.type === "space.lock_set") return `${who} ${f["locked"] ? "locked" : "unlocked"} the room's changes`;
  const title = f["title"] as string | null | undefined;
  const state = f["state"] as string | null | undefined;
  const moved = state === "closed" ? "archived" : state === "open" ? "unarchived" : null;
  if (title != null && moved) return `${who} renamed the room to “${title}” and ${moved} it`;
  if (title != null) return `${who} renamed the room to “${title}”`;
  return moved ? `${who} ${moved} the room` : null;
}

/** The line a message.post (or a room operation) adds to its room, or null. */
export function lineOf(e: AnyEvent, nameOf: (id: string) => string, me: string | null): Line | null {
  const f = e as unknown as Record<string, unknown>;
  const ulid = e.id.replace(/^evt_/, "");
  if (e.type === "message.post") {
    const kind = (f["kind"] as string | undefined) ?? "text";
    const card = CARD_KINDS.has(kind) ? (f[kind] as Record<string, unknown> | undefined) : undefined;
    const receipt = f["run_receipt"] as { disposition?: "queued" | "steered" } | null | undefined;
    const attachments = f["attachments"] as LinkedFile[] | null | undefined;
    const addressed = f["addressed_to"] as string[] | null | undefined;
    return {
      id: (f["message_id"] as string | undefined) ?? `msg_${ulid}`,
      seq: e.seq,
      kind,
      author_id: e.actor.id,
      text: (f["text"] as string | null | undefined) ?? null,
      reply_to: (f["reply_to"] as string | null | undefined) ?? null,
      ts: e.ts,
      ...(card ? { card } : {}),
      ...(attachments?.length ? { attachments } : {}),
      ...(addressed ? { addressed_to: addressed } : {}),
      ...(f["held"] === true ? { held: true, ...(Array.isArray(f["held_for"]) ? { held_for: f["held_for"] as string[] } : {}) } : {}),
      ...(f["exchange"] && typeof f["exchange"] === "object" ? { exchange: f["exchange"] as NonNullable<Line["exchange"]> } : {}),
      ...(typeof f["held_since"] === "string" ? { held_since: f["held_since"] } : {}),
      edited: false,
      deleted: false,
      pinned: false,
      feedback: [],
      ...(receipt?.disposition && e.actor.id === me ? { receipt: receipt.disposition } : {}),
    };
  }
  const words = systemLine(e, nameOf);
  if (words === null) return null;
  return {
    id: `msg_${ulid}`,
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
  };
}

/**
 * The room's lines after an agent took another's place there (membership.replaced): what
 * the replaced harness or agent said reads as the agent's from then on, as the server's
 * lines read it (docs/adr/0136). The very array when nothing changed.
 */
export function reauthor(lines: Line[], e: AnyEvent): Line[] {
  if (e.type !== "membership.replaced") return lines;
  const f = e as unknown as Record<string, unknown>;
  const replaced = f["replaced"] as string | undefined;
  const taker = f["participant_id"] as string | undefined;
  if (!replaced || !taker || !lines.some((l) => l.author_id === replaced && l.kind !== "system")) return lines;
  return lines.map((l) => (l.author_id === replaced && l.kind !== "system" ? { ...l, author_id: taker } : l));
}

/** Fold a change to an existing line (edit, take back, pin, feedback); true if it changed. */
export function foldChange(line: Line, e: AnyEvent): boolean {
  const f = e as unknown as Record<string, unknown>;
  switch (e.type) {
    case "message.edited":
      if (line.deleted) return false;
      line.text = String(f["text"] ?? "");
      line.edited = true;
      return true;
    case "message.deleted":
      line.deleted = true;
      line.text = null;
      line.pinned = false;
      line.feedback = [];
      delete line.card;
      delete line.attachments;
      return true;
    case "message.pinned":
      line.pinned = true;
      return true;
    case "message.heard": {
      // "J1 heard this while working" (spec: What a harness hears when someone speaks).
      const heard = line.heard_by ?? [];
      if (heard.includes(e.actor.id)) return false;
      line.heard_by = [...heard, e.actor.id];
      return true;
    }
    case "message.unpinned":
      line.pinned = false;
      return true;
    case "attachment.transcribed": {
      // What Chips heard in a voice note the line carries (ADR 0137).
      const files = foldHeard(line.attachments, f);
      if (!files) return false;
      line.attachments = files;
      return true;
    }
    case "feedback": {
      const item: FeedbackItem = { from: e.actor.id, kind: f["kind"] as FeedbackItem["kind"] };
      if (typeof f["emoji"] === "string") item.emoji = f["emoji"];
      if (typeof f["note"] === "string") item.note = f["note"];
      if (Array.isArray(f["reasons"])) item.reasons = f["reasons"] as string[];
      if (f["withdrawn"] === true) {
        line.feedback = line.feedback.filter((x) => !(x.from === item.from && x.kind === "reaction" && x.emoji === item.emoji));
      } else {
        line.feedback = [...line.feedback, item];
      }
      return true;
    }
    default:
      return false;
  }
}

/** The quiet line under a message some agents' turns heard while working, or null. */
export function heardLine(line: Line, nameOf: (id: string) => string): string | null {
  const heard = line.heard_by ?? [];
  if (!heard.length || line.deleted) return null;
  return `${listWords(heard.map(nameOf))} heard this while working`;
}

/** Reactions under a line, grouped by emoji: [emoji, who][] in first-seen order. */
export function reactionsOf(line: Line): [string, string[]][] {
  const by = new Map<string, string[]>();
  for (const f of line.feedback) {
    if (f.kind !== "reaction" || !f.emoji) continue;
    by.set(f.emoji, [...(by.get(f.emoji) ?? []), f.from]);
  }
  return [...by.entries()];
}

/** Insert a line in seq order, replacing one of the same id; returns the new array. */
export function insertLine(lines: Line[], line: Line): Line[] {
  const without = lines.filter((l) => l.id !== line.id);
  let i = without.length;
  while (i > 0 && without[i - 1]!.seq > line.seq) i -= 1;
  return [...without.slice(0, i), line, ...without.slice(i)];
}
