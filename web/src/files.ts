// Files in the app, as pure rules (docs/product/messages.md, Attachments): what kind a picked file
// is, how big it may be and what a refusal says — the sentence the server would use
// (chips_common.rules.files) — and where a linked file is fetched from.
import type { Attachment, Heard as Heard_ } from "./gen/events";

export type FileKind = "photo" | "video" | "voice_note" | "file";

/** What Chips heard in a voice note (attachment.transcribed, ADR 0137), as a file carries it. */
export type Heard = Heard_;

/** What GET /v1/uploads/caps answers: what a file of each kind may weigh here. */
export interface Caps {
  ceiling_bytes: number;
  photos_bytes: number;
  videos_bytes: number;
  files_bytes: number;
}

/** A file as a frame or a read carries it: as stored, with links signed for this person. */
export interface LinkedFile extends Attachment {
  url?: string;
  url_expires_at?: string;
  thumbnail_url?: string;
}

/** One of the room's files (GET /v1/spaces/:id/files). */
export interface RoomFile extends LinkedFile {
  by: { id: string; name?: string; kind?: string };
  at: string;
  message_id: string | null;
}

/** What POST /v1/uploads answers. */
export interface Uploaded {
  upload_id: string;
  name: string;
  mime_type: string;
  kind: FileKind;
  byte_size: number;
}

// The pictures Chips decodes itself; any other picture (SVG above all) is a plain file.
const PICTURES = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"]);
const INLINE = new Set([...PICTURES, "application/pdf"]);
// Audio counts as a file (docs/product/messages.md, Attachments): a voice note too.
const KIND_WORDS: Record<FileKind, string> = { photo: "Photos", video: "Videos", voice_note: "Files", file: "Files" };

/** The kind a picked file is likely to be, from what the browser says its type is. */
export function kindOf(mimeType: string): FileKind {
  if (PICTURES.has(mimeType)) return "photo";
  if (mimeType.startsWith("video/")) return "video";
  return "file";
}

/** `62.3 MB`, `50 MB`, `800 KB`: decimal units, at most one decimal. */
export function sizeWords(bytes: number): string {
  for (const [unit, scale] of [
    ["GB", 1e9],
    ["MB", 1e6],
    ["KB", 1e3],
  ] as const) {
    if (bytes >= scale) return `${Math.round((bytes / scale) * 10) / 10} ${unit}`;
  }
  return `${bytes} bytes`;
}

export function capFor(caps: Caps, kind: FileKind): number {
  const own = kind === "photo" ? caps.photos_bytes : kind === "video" ? caps.videos_bytes : caps.files_bytes; // a voice note is a file
  return Math.min(own, caps.ceiling_bytes);
}

/** Why a file may not be sent here, before a byte of it is uploaded; null when it may. */
export function overCap(caps: Caps | null, kind: FileKind, bytes: number): string | null {
  if (!caps) return null;
  const cap = capFor(caps, kind);
  if (bytes <= cap) return null;
  return `${KIND_WORDS[kind]} here are capped at ${sizeWords(cap)}, and this one is ${sizeWords(bytes)}.`;
}

/** Whether the browser may show it in the page (a photo) or open it (a PDF). */
export function opensInline(mimeType: string): boolean {
  return INLINE.has(mimeType);
}

/**
 * A signed link on this page's own origin. The signature covers the path and query only,
 * and the gateway the page came from serves every file, so the link works whatever
 * address the gateway that signed it was configured with (and the page's policy, which
 * allows this origin alone, lets it load).
 */
export function sameOrigin(url: string | undefined, origin: string): string | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url, origin);
    if (!u.pathname.startsWith("/v1/attachments/")) return undefined;
    return origin + u.pathname + u.search;
  } catch {
    return undefined;
  }
}

/** Whether a signed link has (nearly) run out, so the file is fetched with the token instead. */
export function expired(file: LinkedFile, now: number): boolean {
  if (!file.url || !file.url_expires_at) return true;
  return Date.parse(file.url_expires_at) - 5_000 <= now;
}

/** A voice note's length as a player says it: `0:04`, `1:20`. */
export function clockOf(ms: number | null | undefined): string {
  if (ms == null || ms < 0) return "";
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
}

/** What is shown under a voice note's player: its words, why there are none, or that it is
 * still being heard. */
export function heardWords(file: LinkedFile): { words: string; note: string | null; waiting: boolean } {
  const heard = file.heard;
  if (!heard) return { words: "", note: "Transcribing…", waiting: true };
  if (heard.outcome === "words") return { words: heard.transcript ?? "", note: heard.note ?? null, waiting: false };
  return { words: "", note: heard.note ?? "Not transcribed.", waiting: false };
}

/** Fold what was heard in a voice note into the line's copy of it; true if it changed. */
export function foldHeard(files: LinkedFile[] | undefined, e: Record<string, unknown>): LinkedFile[] | null {
  if (!files) return null;
  const id = e["attachment_id"];
  if (!files.some((f) => f.attachment_id === id)) return null;
  const heard: Heard = { outcome: e["outcome"] as Heard["outcome"] };
  for (const k of ["transcript", "note", "engine"] as const) if (typeof e[k] === "string") (heard as unknown as Record<string, string>)[k] = e[k] as string;
  return files.map((f) => (f.attachment_id === id ? { ...f, heard } : f));
}

/** A recording as a 16-bit PCM WAV (mono), the kind of voice note Chips hears. */
export function wavOf(samples: Float32Array, rate: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(44 + samples.length * 2);
  const v = new DataView(out.buffer);
  const text = (at: number, s: string) => [...s].forEach((c, i) => v.setUint8(at + i, c.charCodeAt(0)));
  text(0, "RIFF");
  v.setUint32(4, 36 + samples.length * 2, true);
  text(8, "WAVE");
  text(12, "fmt ");
  v.setUint32(16, 16, true);
  v.setUint16(20, 1, true);
  v.setUint16(22, 1, true);
  v.setUint32(24, rate, true);
  v.setUint32(28, rate * 2, true);
  v.setUint16(32, 2, true);
  v.setUint16(34, 16, true);
  text(36, "data");
  v.setUint32(40, samples.length * 2, true);
  samples.forEach((x, i) => v.setInt16(44 + i * 2, Math.max(-1, Math.min(1, x)) * 0x7fff, true));
  return out;
}
