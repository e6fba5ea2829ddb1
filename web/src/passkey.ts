// A passkey (WebAuthn) as this browser's device key, where the browser offers one
// (docs/adr/0145). Registered from a device already paired; later it answers a fresh
// challenge of the server's for a session, in place of a WebCrypto key's signature.
import { type Api, unsigned } from "./api";
import { b64url } from "./device";

/** Whether this browser can make and use passkeys. */
export function passkeysOffered(): boolean {
  return typeof window !== "undefined" && typeof window.PublicKeyCredential === "function" && !!navigator.credentials;
}

export function fromB64url(s: string): ArrayBuffer {
  const b64 = s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4);
  const raw = atob(b64);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out.buffer;
}

type Json = Record<string, unknown>;
interface Descriptor {
  id: string;
  type: string;
  transports?: string[];
}

/** The server's creation options (buffers base64url) as navigator.credentials.create() takes them. */
export function creationOptions(o: Json): PublicKeyCredentialCreationOptions {
  const user = o["user"] as { id: string; name: string; displayName: string };
  return {
    ...(o as unknown as PublicKeyCredentialCreationOptions),
    challenge: fromB64url(o["challenge"] as string),
    user: { ...user, id: fromB64url(user.id) },
    excludeCredentials: ((o["excludeCredentials"] as Descriptor[] | undefined) ?? []).map((d) => ({
      ...d,
      type: "public-key" as const,
      id: fromB64url(d.id),
      transports: d.transports as AuthenticatorTransport[] | undefined,
    })),
  };
}

/** The server's request options as navigator.credentials.get() takes them. */
export function requestOptions(o: Json): PublicKeyCredentialRequestOptions {
  return {
    ...(o as unknown as PublicKeyCredentialRequestOptions),
    challenge: fromB64url(o["challenge"] as string),
    allowCredentials: ((o["allowCredentials"] as Descriptor[] | undefined) ?? []).map((d) => ({
      ...d,
      type: "public-key" as const,
      id: fromB64url(d.id),
      transports: d.transports as AuthenticatorTransport[] | undefined,
    })),
  };
}

/** What the authenticator answered, as JSON the server reads (buffers base64url). */
export function credentialJson(c: PublicKeyCredential): Json {
  const r = c.response as AuthenticatorAttestationResponse & AuthenticatorAssertionResponse;
  const response: Json = { clientDataJSON: b64url(r.clientDataJSON) };
  if ("attestationObject" in r && r.attestationObject) {
    response["attestationObject"] = b64url(r.attestationObject);
    response["transports"] = typeof r.getTransports === "function" ? r.getTransports() : [];
  }
  if ("authenticatorData" in r && r.authenticatorData) {
    response["authenticatorData"] = b64url(r.authenticatorData);
    response["signature"] = b64url(r.signature);
    if (r.userHandle) response["userHandle"] = b64url(r.userHandle);
  }
  return { id: c.id, rawId: b64url(c.rawId), type: c.type, response, clientExtensionResults: c.getClientExtensionResults() };
}

/** A refusal of the browser's own (cancelled, not allowed) as a sentence. */
export function passkeyWords(err: unknown): string {
  const name = err instanceof Error ? err.name : "";
  if (name === "NotAllowedError") return "The passkey was not used: it was cancelled, or this browser has none for Chips here.";
  if (name === "InvalidStateError") return "This passkey is one of your devices already.";
  if (name === "SecurityError") return "Passkeys need this page's own address (https, or localhost).";
  return err instanceof Error ? err.message : "The passkey did not answer.";
}

export interface PasskeySignedIn {
  token: string;
  expires_at: number;
  device_id: string;
  participant_id: string;
  workspace_id: string;
  workspace_name: string;
  credential_id: string;
}

/** Ask a passkey to answer a fresh challenge of the server's: a session for its device.
 * With `credentialId`, only that passkey is asked (a session renewed). */
export async function passkeySession(credentialId?: string): Promise<PasskeySignedIn> {
  const { options } = await unsigned<{ options: Json }>("/v1/passkeys/challenge", {});
  const publicKey = requestOptions(options);
  if (credentialId) publicKey.allowCredentials = [{ type: "public-key", id: fromB64url(credentialId) }];
  const c = (await navigator.credentials.get({ publicKey })) as PublicKeyCredential | null;
  if (!c) throw new Error("The passkey did not answer.");
  const opened = await unsigned<Omit<PasskeySignedIn, "credential_id">>("/v1/passkeys/sign-in", { credential: credentialJson(c) });
  return { ...opened, credential_id: c.id };
}

/** Make a passkey for Chips here, from this paired device: one more device of the person's. */
export async function addPasskey(api: Api, name: string): Promise<{ device_id: string; name: string; credential_id: string }> {
  const { options } = await api.call<{ options: Json }>("POST", "/v1/passkeys/options");
  const c = (await navigator.credentials.create({ publicKey: creationOptions(options) })) as PublicKeyCredential | null;
  if (!c) throw new Error("The passkey was not made.");
  return api.call("POST", "/v1/passkeys", { credential: credentialJson(c), name });
}
