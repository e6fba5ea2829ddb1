// The app's service worker (issue #29), built to /sw.js: a Web Push (RFC 8291, decrypted
// by the browser) becomes a notification that names the room and what is asked, and a
// click on it opens the app at the line — an open window of the app is focused and told
// where to go, else a new one is opened there. A push saying the thing is done takes its
// notification away. The words come from notifications.ts, shared with the page.
import { shownOf } from "./notifications";

// The few service-worker types used here (the DOM library the app compiles against has
// none, and the WebWorker one clashes with it).
interface WindowClientLike {
  url: string;
  focus(): Promise<unknown>;
  postMessage(message: unknown): void;
}
interface ClientsLike {
  matchAll(o: { type: "window"; includeUncontrolled: boolean }): Promise<WindowClientLike[]>;
  openWindow(url: string): Promise<unknown>;
}
interface ExtendableEventLike extends Event {
  waitUntil(p: Promise<unknown>): void;
}
interface PushEventLike extends ExtendableEventLike {
  data: { json(): unknown; text(): string } | null;
}
interface NotificationEventLike extends ExtendableEventLike {
  notification: Notification;
}
interface RegistrationLike {
  showNotification(title: string, options: NotificationOptions): Promise<void>;
  getNotifications(filter?: { tag?: string }): Promise<Notification[]>;
}
interface WorkerScope {
  registration: RegistrationLike;
  clients: ClientsLike;
  location: Location;
  skipWaiting(): Promise<void>;
  addEventListener(type: string, fn: (e: Event) => void): void;
}

const sw = self as unknown as WorkerScope & { clients: ClientsLike & { claim(): Promise<void> } };

sw.addEventListener("install", () => void sw.skipWaiting());
sw.addEventListener("activate", (e) => (e as ExtendableEventLike).waitUntil(sw.clients.claim()));

function payloadOf(e: PushEventLike): unknown {
  if (!e.data) return null;
  try {
    return e.data.json();
  } catch {
    return { title: "Chips", body: e.data.text() };
  }
}

sw.addEventListener("push", (event) => {
  const e = event as PushEventLike;
  const shown = shownOf(payloadOf(e));
  e.waitUntil(
    (async () => {
      if (shown.done) {
        for (const n of await sw.registration.getNotifications({ tag: shown.tag })) n.close();
        return;
      }
      await sw.registration.showNotification(shown.title, {
        body: shown.body,
        tag: shown.tag,
        data: { url: shown.url },
        icon: "/favicon.svg",
      });
    })(),
  );
});

sw.addEventListener("notificationclick", (event) => {
  const e = event as NotificationEventLike;
  e.notification.close();
  const data = (e.notification.data ?? {}) as { url?: string };
  const url = new URL(data.url ?? "/#/inbox", sw.location.origin);
  e.waitUntil(
    (async () => {
      const open = await sw.clients.matchAll({ type: "window", includeUncontrolled: true });
      const here = open.find((c) => new URL(c.url).origin === url.origin);
      if (here) {
        // Told first, so the window goes to the line even where it may not be focused.
        here.postMessage({ chips: "open", hash: url.hash });
        await here.focus().catch(() => undefined);
        return;
      }
      await sw.clients.openWindow(url.href);
    })(),
  );
});
