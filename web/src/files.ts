// Files in the app, as pure rules (spec/messages.md, Attachments): what kind a picked file
// is, how big it may be and what a refusal says — the sentence the server would use
// (chips_common.rules.files) — and where a linked file is fetched from.
import type { Attachment } from "./gen/events";

export type FileKind = "photo" | "video" | "file";

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
const KIND_WORDS: Record<FileKind, string> = { photo: "Photos", video: "Videos", file: "Files" };

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
  const own = kind === "photo" ? caps.photos_bytes : kind === "video" ? caps.videos_bytes : caps.files_bytes;
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
