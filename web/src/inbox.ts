// The inbox's state (issue #29): what waits for me, read from GET /v1/notifications and kept
// current by the socket's notification frames, so read and done agree on all my devices;
// the unread count in the tab's title; each room's mute; my notification preferences; and
// the browser's side (a service worker, the Notification API, Web Push; push.ts).
// Kept beside the store (store.ts), which tells it of each hello and each frame.
import { ApiError } from "./api";
import {
  allRead,
  appendPage,
  DEFAULT_PREFS,
  foldFrame,
  inQuietHours,
  shownOf,
  tabTitle,
  type InboxFilter,
  type Lists,
  type Ntf,
  type NtfPage,
  type NtfPrefs,
} from "./notifications";
import { pushState, registerWorker, showInPage, subscribePush, unsubscribePush, type PushState } from "./push";
import { store } from "./store";

const PAGE = 50;
const BASE_TITLE = "Chips";

export class Inbox {
  filter: InboxFilter = "needs_me";
  /** Each filter's list as read (null until read), newest first. */
  lists: Lists = { needs_me: null, all: null };
  /** Whether the server has older ones than the list holds. */
  more: Record<InboxFilter, boolean> = { needs_me: false, all: false };
  unread = 0;
  needsMe = 0;
  loading = false;
  error: string | null = null;
  /** False where this gateway serves no notifications (no route): no inbox is drawn. */
  available: boolean | null = null;
  /** Each room's mute, once read or set. */
  muted = new Map<string, boolean>();
  prefs: NtfPrefs | null = null;
  push: PushState = "unsupported";
  private countsTimer: ReturnType<typeof setTimeout> | null = null;
  private asked = new Set<string>();

  constructor() {
    store.hooks.hello.push(() => void this.connected());
    store.hooks.notification.push((f) => this.take(f));
    store.hooks.signOut.push(() => this.reset());
    if (typeof navigator !== "undefined" && "serviceWorker" in navigator) {
      // The service worker's click on a notification: go to its line (sw.ts).
      navigator.serviceWorker.addEventListener("message", (e: MessageEvent) => {
        const m = e.data as { chips?: string; hash?: string } | null;
        if (m?.chips === "open" && typeof m.hash === "string" && m.hash.startsWith("#/")) location.hash = m.hash;
      });
    }
  }

  private changed(): void {
    if (typeof document !== "undefined") document.title = tabTitle(this.unread, BASE_TITLE);
    store.changed();
  }

  reset(): void {
    this.lists = { needs_me: null, all: null };
    this.unread = 0;
    this.needsMe = 0;
    this.muted.clear();
    this.prefs = null;
    this.available = null;
    this.changed();
  }

  /** Each (re)connection: the lists read again, since frames may have been missed while away. */
  async connected(): Promise<void> {
    void registerWorker().then(() => pushState().then((s) => ((this.push = s), this.changed())));
    const stale = this.filter === "needs_me" ? "all" : "needs_me";
    this.lists[stale] = null;
    await this.load(this.filter);
  }

  /** The first page of a filter's list (or, with `older`, the page after the last one held). */
  async load(filter: InboxFilter, older = false): Promise<void> {
    const api = store.api;
    if (!api) return;
    const held = this.lists[filter];
    const before = older ? held?.[held.length - 1]?.id : undefined;
    this.loading = true;
    this.changed();
    try {
      const page = await api.call<NtfPage>("GET", "/v1/notifications", undefined, { filter, limit: PAGE, before });
      this.available = true;
      this.lists[filter] = older && held ? appendPage(held, page.notifications) : appendPage([], page.notifications);
      this.more[filter] = page.notifications.length >= PAGE;
      this.unread = page.unread;
      this.needsMe = page.needs_me;
      this.error = null;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404 && err.code === "not_found" && !before) this.available = false;
      else this.error = (err as Error).message;
    } finally {
      this.loading = false;
      this.changed();
    }
  }

  setFilter(filter: InboxFilter): void {
    this.filter = filter;
    this.changed();
    if (this.lists[filter] === null) void this.load(filter);
  }

  /** The list as drawn: the filter's own. */
  get shown(): Ntf[] {
    return this.lists[this.filter] ?? [];
  }

  /** A notification frame: made or changed, here or on another of my devices. */
  take(frame: Record<string, unknown>): void {
    const folded = foldFrame(this.lists, frame);
    this.lists = folded.lists;
    if (folded.unread !== null) this.unread = folded.unread;
    if (folded.needsMe !== null) this.needsMe = folded.needsMe;
    else this.countsSoon();
    if (folded.fresh || folded.done) this.available = true;
    this.changed();
    if (folded.fresh) this.tellBrowser(folded.fresh);
    if (folded.done) void this.closeShown(folded.done);
  }

  /** The needs-me count, read again (frames name the unread count only). */
  private countsSoon(): void {
    if (this.countsTimer) return;
    this.countsTimer = setTimeout(async () => {
      this.countsTimer = null;
      try {
        const page = await store.api!.call<NtfPage>("GET", "/v1/notifications", undefined, { filter: "needs_me", limit: 1 });
        this.needsMe = page.needs_me;
        this.unread = page.unread;
        this.changed();
      } catch {
        /* the next frame reads it again */
      }
    }, 200);
  }

  /**
   * While the app is open but not looked at: the browser's own notification (through the
   * service worker, so a click opens the line as a push's does). Not in quiet hours; and
   * where this browser takes pushes, the push shows it (the same tag: never two).
   */
  private tellBrowser(n: Ntf): void {
    if (typeof document === "undefined" || document.visibilityState === "visible") return;
    if (this.muted.get(n.space_id) && n.kind !== "approval" && n.kind !== "question") return;
    const now = new Date();
    const hhmm = `${String(now.getHours()).padStart(2, "0")}:${String(now.getMinutes()).padStart(2, "0")}`;
    if (inQuietHours(this.prefs?.quiet_hours ?? null, hhmm)) return;
    void showInPage(shownOf(n));
  }

  private async closeShown(n: Ntf): Promise<void> {
    try {
      const reg = await navigator.serviceWorker?.getRegistration();
      for (const shown of (await reg?.getNotifications({ tag: shownOf(n).tag })) ?? []) shown.close();
    } catch {
      /* nothing shown */
    }
  }

  // --- read and done -----------------------------------------------------------------

  async markRead(ids: string[]): Promise<void> {
    const unreadIds = ids.filter((id) => this.shown.some((n) => n.id === id && !n.read_at));
    if (!unreadIds.length) return;
    try {
      const r = await store.api!.call<{ unread: number }>("POST", "/v1/notifications/read", { ids: unreadIds });
      const now = new Date().toISOString();
      for (const f of ["all", "needs_me"] as const) {
        const list = this.lists[f];
        if (list) this.lists[f] = list.map((n) => (unreadIds.includes(n.id) && !n.read_at ? { ...n, read_at: now } : n));
      }
      this.unread = r.unread;
      this.changed();
    } catch (err) {
      store.toast((err as Error).message);
    }
  }

  async markAllRead(): Promise<void> {
    try {
      const r = await store.api!.call<{ unread: number }>("POST", "/v1/notifications/read", { all: true });
      const now = new Date().toISOString();
      for (const f of ["all", "needs_me"] as const) {
        const list = this.lists[f];
        if (list) this.lists[f] = allRead(list, now);
      }
      this.unread = r.unread;
      this.changed();
    } catch (err) {
      store.toast((err as Error).message);
    }
  }

  /**
   * Decide an approval from the inbox: the same event the card in the room sends
   * (approval.resolved); the room's card closes and the notification is marked done by the
   * server, which tells every device.
   */
  async decide(n: Ntf, decision: "approve" | "deny"): Promise<void> {
    await store.send({ type: "approval.resolved", space_id: n.space_id, approval_id: n.ref_id, decision });
    void this.markRead([n.id]);
  }

  // --- mute per room -------------------------------------------------------------------

  /** Whether a room is muted, read once when first asked (undefined until known). */
  mutedOf(spaceId: string): boolean | undefined {
    if (!this.muted.has(spaceId) && !this.asked.has(spaceId) && store.api) {
      this.asked.add(spaceId);
      void store.api
        .call<{ muted: boolean }>("GET", `/v1/spaces/${encodeURIComponent(spaceId)}/notifications`)
        .then((r) => (this.muted.set(spaceId, r.muted), this.changed()))
        .catch(() => this.asked.delete(spaceId));
    }
    return this.muted.get(spaceId);
  }

  async mute(spaceId: string, muted: boolean): Promise<void> {
    try {
      const r = await store.api!.call<{ muted: boolean }>("PUT", `/v1/spaces/${encodeURIComponent(spaceId)}/notifications`, { muted });
      this.muted.set(spaceId, r?.muted ?? muted);
      store.toast(muted ? "Muted: this room tells you only of approvals and questions only you can answer." : "This room notifies you again.");
      this.changed();
    } catch (err) {
      store.toast((err as Error).message);
    }
  }

  // --- preferences and push ------------------------------------------------------------

  async loadPrefs(): Promise<void> {
    try {
      this.prefs = { ...DEFAULT_PREFS, ...(await store.api!.call<NtfPrefs>("GET", "/v1/notification-preferences")) };
    } catch (err) {
      this.error = (err as Error).message;
    }
    this.push = await pushState();
    this.changed();
  }

  async savePrefs(prefs: NtfPrefs): Promise<void> {
    const body: NtfPrefs = { email: prefs.email, email_delay_seconds: prefs.email_delay_seconds, push: prefs.push, quiet_hours: prefs.quiet_hours };
    if (prefs.email_address !== undefined) body.email_address = prefs.email_address?.trim() || null;
    if (prefs.time_zone !== undefined) body.time_zone = prefs.time_zone.trim();
    this.prefs = { ...DEFAULT_PREFS, ...(await store.api!.call<NtfPrefs>("PUT", "/v1/notification-preferences", body)) };
    this.changed();
  }

  /** Push on this browser: permission, the server's VAPID key, the subscription, registered. */
  async enablePush(): Promise<void> {
    this.push = await subscribePush(store.api!);
    this.changed();
  }

  async disablePush(): Promise<void> {
    this.push = await unsubscribePush(store.api!);
    this.changed();
  }
}

export const inbox = new Inbox();
