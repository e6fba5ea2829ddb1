// The workspace's settings in the app, as pure rules (docs/product/websocket.md, the referee;
// docs/product/messages.md, Attachments): what the forms show of what is set, and the event
// a form sends — or the sentence that says why it can't, before anything is sent.
import type { Caps, FileKind } from "./files";
import { sizeWords } from "./files";

/** What GET /v1/referee answers. */
export interface Referee {
  stop: number | "never";
  hold: number | "never";
  circles: boolean;
  seq?: number | null;
}

/** The referee's form as typed: a count each (blank with "never" ticked), and circles. */
export interface RefereeForm {
  stop: string;
  stopNever: boolean;
  hold: string;
  holdNever: boolean;
  circles: boolean;
}

export const SETTING_MIN = 2;
export const SETTING_MAX = 1000;

export function refereeForm(r: Referee): RefereeForm {
  return {
    stop: r.stop === "never" ? "" : String(r.stop),
    stopNever: r.stop === "never",
    hold: r.hold === "never" ? "" : String(r.hold),
    holdNever: r.hold === "never",
    circles: r.circles,
  };
}

export type Checked<T> = { ok: true; value: T } | { ok: false; field: string; error: string };

function count(text: string, what: string, field: string): Checked<number> {
  const t = text.trim();
  const n = /^\d+$/.test(t) ? Number(t) : NaN;
  if (!Number.isInteger(n) || n < SETTING_MIN || n > SETTING_MAX) {
    return { ok: false, field, error: `${what} is a whole number of messages from ${SETTING_MIN} to ${SETTING_MAX}, or never.` };
  }
  return { ok: true, value: n };
}

/** The `workspace.referee_set` a form sends, or why it can't be sent as typed. */
export function refereeEvent(f: RefereeForm): Checked<{ type: "workspace.referee_set"; stop: number | "never"; hold: number | "never"; circles: boolean }> {
  let stop: number | "never" = "never";
  let hold: number | "never" = "never";
  if (!f.stopNever) {
    const c = count(f.stop, "The stop", "stop");
    if (!c.ok) return c;
    stop = c.value;
  }
  if (!f.holdNever) {
    const c = count(f.hold, "The hold", "hold");
    if (!c.ok) return c;
    hold = c.value;
  }
  return { ok: true, value: { type: "workspace.referee_set", stop, hold, circles: f.circles } };
}

/** One sentence for what the referee does as set. */
export function refereeWords(r: Referee): string {
  const stop = r.stop === "never" ? "Agents are never told to stop" : `Agents are told to stop after ${r.stop} messages to each other`;
  const hold = r.hold === "never" ? "never held" : `held after ${r.hold}`;
  const circles = r.circles ? "; going in a circle stops them too." : ".";
  return `${stop}, ${hold}${circles}`;
}

export const CAP_KINDS: { kind: FileKind; field: "photos_bytes" | "videos_bytes" | "files_bytes"; label: string }[] = [
  { kind: "photo", field: "photos_bytes", label: "Photos" },
  { kind: "video", field: "videos_bytes", label: "Videos" },
  { kind: "file", field: "files_bytes", label: "Other files" },
];

const UNITS: Record<string, number> = { b: 1, byte: 1, bytes: 1, kb: 1e3, k: 1e3, mb: 1e6, m: 1e6, gb: 1e9, g: 1e9 };

/** `25 MB`, `800kb`, `1.5 GB`, `12` (megabytes): a size as typed, in bytes; null if unreadable. */
export function parseSize(text: string): number | null {
  const m = /^\s*(\d+(?:[.,]\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  if (!m) return null;
  const scale = m[2] ? UNITS[m[2].toLowerCase()] : 1e6;
  if (scale === undefined) return null;
  const bytes = Math.round(Number(m[1]!.replace(",", ".")) * scale);
  return bytes >= 1 ? bytes : null;
}

/** The caps form as typed: a size per kind, blank where the kind has no cap of its own. */
export type CapsForm = Record<"photos_bytes" | "videos_bytes" | "files_bytes", string>;

export function capsForm(caps: Caps): CapsForm {
  // A kind capped at the ceiling (or not at all) reads as blank: only the ceiling holds it.
  const shown = (b: number) => (b >= caps.ceiling_bytes ? "" : sizeWords(b));
  return { photos_bytes: shown(caps.photos_bytes), videos_bytes: shown(caps.videos_bytes), files_bytes: shown(caps.files_bytes) };
}

/** The `attachment.caps_set` a form sends, or why it can't be: unreadable, or over the ceiling. */
export function capsEvent(f: CapsForm, ceiling: number): Checked<{ type: "attachment.caps_set"; photos_bytes: number | null; videos_bytes: number | null; files_bytes: number | null }> {
  const out = { type: "attachment.caps_set" as const, photos_bytes: null as number | null, videos_bytes: null as number | null, files_bytes: null as number | null };
  for (const { field, label } of CAP_KINDS) {
    const typed = f[field].trim();
    if (!typed) continue;
    const bytes = parseSize(typed);
    if (bytes === null) return { ok: false, field, error: `${label}: “${typed}” is not a size. Write it as 25 MB, 800 KB or 1.5 GB, or leave it blank for no cap of its own.` };
    if (bytes > ceiling) return { ok: false, field, error: `${label}: nothing over ${sizeWords(ceiling)} is taken on this server, whatever the cap. Make it ${sizeWords(ceiling)} or less, or leave it blank.` };
    out[field] = bytes;
  }
  return { ok: true, value: out };
}

/** Whether this person may change the workspace's settings (the door says the same). */
export function mayChangeSettings(role: string | null | undefined): boolean {
  return role === "owner" || role === "admin";
}
