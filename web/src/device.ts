// This browser as a paired device (docs/adr/0125): an ECDSA P-256 key pair made here with
// WebCrypto, the private half not extractable, kept in IndexedDB; the server holds only the
// public half. The device signs a fresh challenge for a session of fifteen minutes, sent as
// a bearer token and renewed before it runs out; no token is ever shown to the person.

export interface DeviceRecord {
  device_id: string;
  workspace_id: string;
  participant_id: string;
  name: string;
  /** A WebCrypto key pair; none when the device is a passkey (docs/adr/0145). */
  keys?: CryptoKeyPair;
  /** A passkey's credential id: its sessions are asked of it. */
  passkey?: string;
}

/** A session a sign-in already opened (a passkey's), used before asking for another. */
export interface OpenSession {
  token: string;
  expires_at: number;
}

const DB = "chips";
const STORE = "device";
const CURRENT = "current";

function db(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function tx<T>(mode: IDBTransactionMode, fn: (s: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  const d = await db();
  return new Promise((resolve, reject) => {
    const req = fn(d.transaction(STORE, mode).objectStore(STORE));
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** The device paired here, or null; a store that does not answer within `waitMs` counts as none. */
export async function loadDevice(waitMs = 3000): Promise<DeviceRecord | null> {
  if (typeof indexedDB === "undefined") return null;
  const read = tx("readonly", (s) => s.get(CURRENT)).then(
    (found) => (found as DeviceRecord | undefined) ?? null,
    () => null,
  );
  const late = new Promise<null>((resolve) => setTimeout(() => resolve(null), waitMs));
  return Promise.race([read, late]);
}

export async function saveDevice(rec: DeviceRecord): Promise<void> {
  await tx("readwrite", (s) => s.put(rec, CURRENT));
}

export async function forgetDevice(): Promise<void> {
  try {
    await tx("readwrite", (s) => s.delete(CURRENT));
  } catch {
    /* nothing kept */
  }
}

export function b64url(bytes: ArrayBuffer | Uint8Array): string {
  const raw = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let s = "";
  for (const b of raw) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** A fresh key pair whose private half cannot be exported, and its public half as the server takes it. */
export async function newKeys(): Promise<{ keys: CryptoKeyPair; publicKey: string }> {
  const keys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"]);
  const spki = await crypto.subtle.exportKey("spki", keys.publicKey);
  return { keys, publicKey: b64url(spki) };
}

/** What a device signs for a session (the server builds the same bytes). */
export function sessionBytes(deviceId: string, ts: number, nonce: string): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(`chips-session-v1\n${deviceId}\n${ts}\n${nonce}`);
}

export class DeviceRefused extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Sessions for one device: a bearer token, signed for afresh before it runs out. */
export class DeviceSession {
  private token: string | null = null;
  private expires = 0;
  private pending: Promise<string> | null = null;

  constructor(
    readonly device: DeviceRecord,
    first: OpenSession | null = null,
    // How a passkey device opens a session (ui wiring, docs/adr/0145).
    private readonly askPasskey: ((credentialId: string) => Promise<OpenSession>) | null = null,
  ) {
    if (first) {
      this.token = first.token;
      this.expires = first.expires_at;
    }
  }

  bearer(): Promise<string> {
    if (this.token && this.expires - 60 > Date.now() / 1000) return Promise.resolve(this.token);
    this.pending ??= this.signAgainIfSameSecond().finally(() => (this.pending = null));
    return this.pending;
  }

  /** A device's signed times must each be newer than its last (the server refuses an
   * older or equal one as a replay): another tab of this browser that signed in this same
   * second is waited out, once or twice, by signing again in the next second. */
  private async signAgainIfSameSecond(): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.sign();
      } catch (err) {
        if (!(err instanceof DeviceRefused) || err.code !== "replayed" || attempt >= 2) throw err;
        await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 20));
      }
    }
  }

  private async sign(): Promise<string> {
    if (!this.device.keys) {
      if (!this.device.passkey || !this.askPasskey) throw new DeviceRefused("unauthorized", "this device has no key");
      const opened = await this.askPasskey(this.device.passkey);
      this.token = opened.token;
      this.expires = opened.expires_at;
      return opened.token;
    }
    const ts = Math.floor(Date.now() / 1000);
    const nonce = b64url(crypto.getRandomValues(new Uint8Array(18)));
    const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, this.device.keys.privateKey, sessionBytes(this.device.device_id, ts, nonce));
    let response: Response;
    try {
      response = await fetch(new URL("/v1/sessions", location.origin), {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ device_id: this.device.device_id, ts, nonce, signature: b64url(signature) }),
      });
    } catch {
      throw new DeviceRefused("unavailable", "Chips can't be reached");
    }
    const data = (await response.json().catch(() => ({}))) as { token?: string; expires_at?: number; code?: string; message?: string };
    if (!response.ok || !data.token) {
      const err = new DeviceRefused(data.code ?? "unavailable", data.message ?? `HTTP ${response.status}`);
      (err as unknown as { status: number }).status = response.status;
      throw err;
    }
    this.token = data.token;
    this.expires = data.expires_at ?? ts + 600;
    return data.token;
  }
}

/** The invite's secret in a link's hash (#/invite/<secret>), or null. */
export function inviteIn(hash: string): string | null {
  if (!hash.startsWith("#/invite/")) return null;
  const secret = decodeURIComponent(hash.slice("#/invite/".length));
  return secret || null;
}

/** A short name for this browser, from its user agent ("Chrome on Linux"). */
export function deviceName(ua: string): string {
  const browser = /Edg\//.test(ua) ? "Edge" : /Firefox\//.test(ua) ? "Firefox" : /Chrom(e|ium)\//.test(ua) ? "Chrome" : /Safari\//.test(ua) ? "Safari" : "Browser";
  const os = /Windows/.test(ua) ? "Windows" : /Mac OS X|Macintosh/.test(ua) ? "macOS" : /Android/.test(ua) ? "Android" : /iPhone|iPad/.test(ua) ? "iOS" : /Linux/.test(ua) ? "Linux" : "";
  return os ? `${browser} on ${os}` : browser;
}

// --- sign-in with the team's identity provider (docs/adr/0135) --------------------------
// The key pair is made before the browser leaves for the provider and kept here as
// "pending"; when the provider sends the browser back paired, it becomes the device's.

const PENDING = "pending";

export async function savePending(keys: CryptoKeyPair): Promise<void> {
  await tx("readwrite", (s) => s.put(keys, PENDING));
}

export async function takePending(): Promise<CryptoKeyPair | null> {
  if (typeof indexedDB === "undefined") return null;
  try {
    const keys = (await tx("readonly", (s) => s.get(PENDING))) as CryptoKeyPair | undefined;
    await tx("readwrite", (s) => s.delete(PENDING));
    return keys ?? null;
  } catch {
    return null;
  }
}

export interface SignedIn {
  device_id: string;
  participant_id: string;
  workspace_id: string;
  name: string;
  workspace_name: string;
}

/** Where the gateway sends a browser back from the provider: #/signed-in/<device>/<person>/<workspace>/<name>/<workspace name>. */
export function signedInFrom(hash: string): SignedIn | null {
  if (!hash.startsWith("#/signed-in/")) return null;
  const parts = hash.slice("#/signed-in/".length).split("/").map(decodeURIComponent);
  if (parts.length < 5 || !parts[0] || !parts[1] || !parts[2]) return null;
  const [device_id = "", participant_id = "", workspace_id = "", name = "", workspace_name = ""] = parts;
  return { device_id, participant_id, workspace_id, name, workspace_name };
}

/** A sign-in the gateway refused: #/sign-in-refused/<code>/<sentence>. */
export function signInRefusedFrom(hash: string): { code: string; message: string } | null {
  if (!hash.startsWith("#/sign-in-refused/")) return null;
  const [code, message] = hash.slice("#/sign-in-refused/".length).split("/").map(decodeURIComponent);
  return { code: code ?? "refused", message: message || "The sign-in was refused." };
}
