// The browser's side of notifications (issue #29): the app's service worker (sw.ts, at
// /sw.js), the Notification API's permission, and this browser's Web Push subscription —
// the server's VAPID key fetched, pushManager.subscribe, and the subscription handed to
// POST /v1/push/subscriptions (or taken back with DELETE).
import type { Api } from "./api";
import { ApiError } from "./api";
import { keyBytes, type Shown } from "./notifications";

/**
 * What this browser does about pushes: none possible, not asked, refused by the person,
 * subscribed here, or asked and failed (the browser's push service not reachable).
 */
export type PushState = "unsupported" | "off" | "denied" | "on" | "failed";

function supported(): boolean {
  return typeof navigator !== "undefined" && "serviceWorker" in navigator && typeof Notification !== "undefined";
}

let registering: Promise<ServiceWorkerRegistration | null> | null = null;

/** The app's service worker, registered once (a module worker: it shares code with the page). */
export function registerWorker(): Promise<ServiceWorkerRegistration | null> {
  if (!supported()) return Promise.resolve(null);
  // Built at /sw.js (vite.config.ts); `npm run dev` serves no worker at the app's scope.
  if (import.meta.env.DEV) return Promise.resolve(null);
  registering ??= navigator.serviceWorker.register("/sw.js", { type: "module", scope: "/" }).catch(() => null);
  return registering;
}

export async function pushState(): Promise<PushState> {
  if (!supported()) return "unsupported";
  if (Notification.permission === "denied") return "denied";
  const reg = await registerWorker();
  if (!reg || !("pushManager" in reg)) return "off";
  const sub = await reg.pushManager.getSubscription().catch(() => null);
  return sub ? "on" : "off";
}

/** Show a notification while the page is open (through the worker, so a click acts alike). */
export async function showInPage(shown: Shown): Promise<void> {
  if (!supported() || Notification.permission !== "granted") return;
  const reg = await registerWorker();
  await reg?.showNotification(shown.title, { body: shown.body, tag: shown.tag, data: { url: shown.url }, icon: "/favicon.svg" }).catch(() => undefined);
}

/** Ask for the browser's permission to show notifications; whether it was given. */
export async function askPermission(): Promise<boolean> {
  if (!supported()) return false;
  if (Notification.permission === "granted") return true;
  return (await Notification.requestPermission()) === "granted";
}

export async function subscribePush(api: Api): Promise<PushState> {
  if (!supported()) return "unsupported";
  if (!(await askPermission())) return Notification.permission === "denied" ? "denied" : "off";
  const reg = await registerWorker();
  if (!reg) return "failed";
  await navigator.serviceWorker.ready;
  try {
    const { public_key } = await api.call<{ public_key: string }>("GET", "/v1/push/vapid-public-key");
    const sub =
      (await reg.pushManager.getSubscription()) ??
      (await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(public_key) }));
    const json = sub.toJSON() as { endpoint?: string; keys?: { p256dh?: string; auth?: string } };
    await api.call("POST", "/v1/push/subscriptions", { endpoint: json.endpoint, keys: { p256dh: json.keys?.p256dh, auth: json.keys?.auth } });
    return "on";
  } catch (err) {
    if (err instanceof ApiError) throw err;
    return "failed";
  }
}

export async function unsubscribePush(api: Api): Promise<PushState> {
  if (!supported()) return "unsupported";
  const reg = await registerWorker();
  const sub = await reg?.pushManager.getSubscription().catch(() => null);
  if (sub) {
    await api.call("DELETE", "/v1/push/subscriptions", { endpoint: sub.endpoint }).catch(() => undefined);
    await sub.unsubscribe().catch(() => undefined);
  }
  return "off";
}
