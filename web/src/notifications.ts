// What waits for a person (issue #29): the inbox's notifications as the API lists them
// (GET /v1/notifications, docs/notifications.md), folded with the socket's notification
// frames so that read and done agree on every device; and what a push shows. Pure: the
// inbox's state (inbox.ts), the service worker (sw.ts) and the screens use these.

export type NtfKind = "approval" | "question" | "handoff" | "mention" | "budget" | "direct";
export type InboxFilter = "needs_me" | "all";

export interface Ntf {
  id: string;
  kind: NtfKind;
  space_id: string;
  space_name: string | null;
  seq: number;
  /** The line, card or ask it is about (a message, an approval or a question id). */
  ref_id: string | null;
  title: string;
  body: string | null;
  created_at: string;
  read_at: string | null;
  done_at: string | null;
  done_reason: string | null;
}

export interface NtfPage {
  notifications: Ntf[];
  unread: number;
  needs_me: number;
}

export type EmailMode = "off" | "immediate" | "delayed" | "digest";

export interface QuietHours {
  start: string;
  end: string;
}

export interface NtfPrefs {
  email: EmailMode;
  email_delay_seconds: number;
  push: boolean;
  quiet_hours: QuietHours | null;
  /** Where mail goes: set here, else the address the person was invited at. */
  email_address?: string | null;
  /** The person's IANA time zone: quiet hours and the digest's hour are in it. */
  time_zone?: string;
}

/** Newest first: by the log's order, then by when it was made, then by id (a stable order). */
export function newestFirst(a: Ntf, b: Ntf): number {
  if (a.seq !== b.seq) return b.seq - a.seq;
  if (a.created_at !== b.created_at) return a.created_at < b.created_at ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/**
 * One notification as it stands after a newer word of it: read and done are never taken
 * back (a frame that was overtaken by a later one, or a page read before a frame, cannot
 * make a read notification unread or a done one open again).
 */
export function merge(old: Ntf | undefined, next: Ntf): Ntf {
  if (!old) return next;
  return {
    ...old,
    ...next,
    read_at: next.read_at ?? old.read_at,
    done_at: next.done_at ?? old.done_at,
    done_reason: next.done_at ? next.done_reason : old.done_at ? old.done_reason : next.done_reason,
  };
}

/**
 * A list with one notification folded in, newest first. In the "needs me" list a done
 * notification that is already there stays (marked done, so nothing moves under the
 * pointer), and one that is not is not added.
 */
export function upsert(list: readonly Ntf[], n: Ntf, filter: InboxFilter): Ntf[] {
  const at = list.findIndex((x) => x.id === n.id);
  if (at < 0) {
    if (filter === "needs_me" && n.done_at) return [...list];
    return [...list, n].sort(newestFirst);
  }
  const out = [...list];
  out[at] = merge(list[at], n);
  return out;
}

export type Lists = Record<InboxFilter, Ntf[] | null>;

export interface Folded {
  lists: Lists;
  /** The counts the frame gave (null where it gave none: read them again). */
  unread: number | null;
  needsMe: number | null;
  /** The notification, when it is one no list held before and waits unread: tell the browser. */
  fresh: Ntf | null;
  /** The notification, when it is done: take its browser notification away. */
  done: Ntf | null;
}

/**
 * A socket frame (`{type: "notification", notification, unread}`) folded into the lists
 * held (a list not read yet stays unread: it is read whole when it is shown).
 */
export function foldFrame(lists: Lists, frame: Record<string, unknown>): Folded {
  const n = frame["notification"] as Ntf | undefined;
  const unread = typeof frame["unread"] === "number" ? frame["unread"] : null;
  const needsMe = typeof frame["needs_me"] === "number" ? frame["needs_me"] : null;
  if (!n || typeof n !== "object" || typeof n.id !== "string") return { lists, unread, needsMe, fresh: null, done: null };
  const known = [...(lists.all ?? []), ...(lists.needs_me ?? [])].some((x) => x.id === n.id);
  const out: Lists = {
    all: lists.all && upsert(lists.all, n, "all"),
    needs_me: lists.needs_me && upsert(lists.needs_me, n, "needs_me"),
  };
  return { lists: out, unread, needsMe, fresh: !known && !n.done_at && !n.read_at ? n : null, done: n.done_at ? n : null };
}

/** Pages read one after another (each `before` the last), with no notification twice. */
export function appendPage(list: readonly Ntf[], page: readonly Ntf[]): Ntf[] {
  const byId = new Map(list.map((n) => [n.id, n]));
  for (const n of page) byId.set(n.id, merge(byId.get(n.id), n));
  return [...byId.values()].sort(newestFirst);
}

/** Everything in the list read (mark all read), as the server says at `now`. */
export function allRead(list: readonly Ntf[], now: string): Ntf[] {
  return list.map((n) => (n.read_at ? n : { ...n, read_at: now }));
}

/** The tab's title: the count of what is unread first, as `(3) Chips`. */
export function tabTitle(unread: number, base = "Chips"): string {
  return unread > 0 ? `(${unread > 99 ? "99+" : unread}) ${base}` : base;
}

/** The badge's words: none at nought. */
export function badge(n: number): string {
  return n <= 0 ? "" : n > 99 ? "99+" : String(n);
}

/** The app's route to the line a notification is about (the room alone when it names none). */
export function hrefOf(n: Pick<Ntf, "space_id" | "ref_id" | "kind">): string {
  const room = `#/room/${encodeURIComponent(n.space_id)}`;
  return n.ref_id && n.kind !== "budget" ? `${room}/at/${encodeURIComponent(n.ref_id)}` : room;
}

const KIND_WORDS: Record<NtfKind, string> = {
  approval: "Approval",
  question: "Question",
  handoff: "Hand-off",
  mention: "Mention",
  budget: "Budget",
  direct: "Direct message",
};

export function kindWords(kind: string): string {
  return KIND_WORDS[kind as NtfKind] ?? "Notification";
}

const DONE_WORDS: Record<string, string> = {
  answered: "Answered",
  approved: "Approved",
  denied: "Denied",
  edited: "Approved as edited",
  resolved: "Decided",
  withdrawn: "Withdrawn",
  expired: "Expired",
  run_ended: "The run ended",
  ended: "The run ended",
  read: "Seen",
  seen: "Seen",
};

/** Why a notification is done, in words (its reason as the server names it, else "Done"). */
export function doneWords(n: Pick<Ntf, "done_at" | "done_reason"> & { kind?: string }): string | null {
  if (!n.done_at) return null;
  if (!n.done_reason) return "Done";
  if (n.done_reason === "answered" && n.kind === "approval") return "Decided";
  return DONE_WORDS[n.done_reason] ?? n.done_reason.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase());
}

/** Whether the inbox may decide it in place: an approval not yet done. */
export function decidable(n: Pick<Ntf, "kind" | "done_at" | "ref_id">): boolean {
  return n.kind === "approval" && !n.done_at && !!n.ref_id;
}

// --- push and the browser's notifications -------------------------------------------

export interface Shown {
  title: string;
  body: string;
  /** One notification on screen per inbox item: a later word of it replaces the first. */
  tag: string;
  /** Where a click opens the app: the route to the line, under the app's own origin. */
  url: string;
  /** Done already: nothing to show, and one on screen is taken away. */
  done: boolean;
}

/**
 * What a push (or a socket frame seen while the page is hidden) shows. The push carries
 * the notification itself, or `{notification}`, or the frame (`{type, notification,
 * unread}`); anything else is shown as "Chips" with what it says, opening the inbox.
 */
export function shownOf(payload: unknown): Shown {
  const p = (payload ?? {}) as Record<string, unknown>;
  const inner = (p["notification"] && typeof p["notification"] === "object" ? p["notification"] : p) as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === "string" ? v : "");
  const id = str(inner["id"]);
  const spaceId = str(inner["space_id"]);
  const kind = str(inner["kind"]) as NtfKind;
  const refId = str(inner["ref_id"]) || null;
  const room = str(inner["space_name"]);
  const title = str(inner["title"]) || (room ? `${kindWords(kind)} in ${room}` : "Chips");
  const body = str(inner["body"]) || (room && str(inner["title"]) ? `In ${room}` : "");
  const url = str(inner["url"]) || str(p["url"]);
  return {
    title,
    // The room named once: in the title where the server put it there, else before the body.
    body: room && body && !body.includes(room) && !title.includes(room) ? `${room} · ${body}` : body,
    tag: id ? `chips-${id}` : "chips",
    // The inbox's own route (the card or line by its id); the server's link (by seq) else.
    url: appUrl(spaceId ? hrefOf({ space_id: spaceId, ref_id: refId, kind }) : url || "#/inbox"),
    done: !!inner["done_at"],
  };
}

/** A route (`#/room/…`) or a link of the app's, as a path under the app's origin. */
export function appUrl(url: string): string {
  if (url.startsWith("#")) return `/${url}`;
  try {
    const u = new URL(url, "http://app.invalid");
    return u.origin === "http://app.invalid" ? `${u.pathname}${u.search}${u.hash}` : `/${u.hash || "#/inbox"}`;
  } catch {
    return "/#/inbox";
  }
}

/** The VAPID key as the server gives it (base64url) in the bytes pushManager.subscribe takes. */
export function keyBytes(base64url: string): Uint8Array<ArrayBuffer> {
  const b64 = base64url.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(base64url.length / 4) * 4, "=");
  const raw = atob(b64);
  const out = new Uint8Array(new ArrayBuffer(raw.length));
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

// --- preferences -------------------------------------------------------------------

export const DEFAULT_PREFS: NtfPrefs = { email: "delayed", email_delay_seconds: 600, push: false, quiet_hours: null };

const HHMM = /^([01]\d|2[0-3]):[0-5]\d$/;

/** What is wrong with preferences as typed, or null: the form says it before it is sent. */
export function prefsProblem(p: NtfPrefs): string | null {
  if (p.email === "delayed" && !(Number.isInteger(p.email_delay_seconds) && p.email_delay_seconds >= 60 && p.email_delay_seconds <= 604800)) {
    return "The delay is between 1 minute and 7 days.";
  }
  if (p.email_address && !/^[^@\s]+@[^@\s]+$/.test(p.email_address)) return "An email address is like ada@example.com.";
  if (p.time_zone !== undefined && !p.time_zone.trim()) return "A time zone is like Europe/Paris.";
  if (p.quiet_hours) {
    if (!HHMM.test(p.quiet_hours.start) || !HHMM.test(p.quiet_hours.end)) return "Quiet hours are times like 22:00.";
    if (p.quiet_hours.start === p.quiet_hours.end) return "Quiet hours start and end at different times.";
  }
  return null;
}

/** Whether `hhmm` (the person's own clock) falls in their quiet hours (which may run past midnight). */
export function inQuietHours(q: QuietHours | null, hhmm: string): boolean {
  if (!q) return false;
  return q.start < q.end ? hhmm >= q.start && hhmm < q.end : hhmm >= q.start || hhmm < q.end;
}
