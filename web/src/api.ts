// HTTP calls to the public API (docs/protocol.md, HTTP), with the person's token or, for
// a paired device, its session (device.ts, docs/adr/0125).
import type { Caps, RoomFile, Uploaded } from "./files";
import type { JobSpend, Pause } from "./agents";
import type { AnyEvent, Participant, Run, Sheet, Line, SpaceList } from "./protocol";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** What else the refusal named (agent_elsewhere names the room the agent is in). */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export interface Profile {
  participant_id: string;
  workspace_id: string;
  kind: string;
  name: string;
  role: string;
  time_zone: string | null;
}

export interface Invite {
  invite_id?: string;
  id?: string;
  name: string;
  email?: string | null;
  role: string;
  expires_at: string;
}

export interface Device {
  id: string;
  kind: "browser" | "cli" | "api_key" | "passkey" | "token";
  name: string;
  user_agent: string | null;
  created_at: string;
  expires_at: string | null;
  last_seen: string | null;
  current: boolean;
}

/** Calls made before anyone is signed in: what an invite is for, and using it. */
export async function unsigned<T>(path: string, body: unknown): Promise<T> {
  let response: Response;
  try {
    response = await fetch(new URL(path, location.origin), { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  } catch {
    throw new ApiError(0, "unavailable", "Chips can't be reached");
  }
  const data = (await response.json().catch(() => ({}))) as T & { code?: string; message?: string };
  if (!response.ok) throw new ApiError(response.status, data.code ?? "unavailable", data.message ?? `HTTP ${response.status}`);
  return data;
}

export interface Ack {
  idempotency_key: string;
  seq: number | null;
  duplicate: boolean;
}

/** A token, or what gives one when asked (a device's session, signed for afresh). */
export type Auth = string | (() => Promise<string>);

export class Api {
  constructor(private readonly auth: Auth) {}

  private async bearer(): Promise<string> {
    if (typeof this.auth === "string") return this.auth;
    try {
      return await this.auth();
    } catch (err) {
      const e = err as { status?: number; code?: string; message?: string };
      throw new ApiError(e.status ?? 0, e.code ?? "unavailable", e.message ?? "Chips can't be reached");
    }
  }

  async call<T>(method: string, path: string, body?: unknown, query?: Record<string, string | number | boolean | undefined>): Promise<T> {
    const url = new URL(path, location.origin);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { Authorization: `Bearer ${await this.bearer()}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response: Response;
    try {
      response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch {
      throw new ApiError(0, "unavailable", "Chips can't be reached");
    }
    const text = await response.text();
    let data: unknown = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!response.ok) {
      const { code, message, ...extra } = (data ?? {}) as { code?: string; message?: string } & Record<string, unknown>;
      throw new ApiError(response.status, code ?? "unavailable", message ?? `HTTP ${response.status}`, extra);
    }
    return data as T;
  }

  ticket(): Promise<{ ticket: string; expires_in: number }> {
    return this.call("POST", "/v1/socket-tickets");
  }

  participants(): Promise<{ participants: Participant[] }> {
    return this.call("GET", "/v1/participants");
  }

  spaces(afterSeq?: number, archived = false): Promise<SpaceList> {
    return this.call("GET", "/v1/spaces", undefined, { after_seq: afterSeq, archived, threads: true });
  }

  sheet(spaceId: string, afterSeq?: number): Promise<Sheet> {
    return this.call("GET", `/v1/spaces/${encodeURIComponent(spaceId)}`, undefined, { after_seq: afterSeq });
  }

  /** A page of the room's lines, read back; `events` is what a person's room draws beside them. */
  lines(spaceId: string, before: number, limit: number, afterSeq?: number): Promise<{ as_of_seq: number; messages: Line[]; events?: AnyEvent[] }> {
    return this.call("GET", `/v1/spaces/${encodeURIComponent(spaceId)}/messages`, undefined, { before, limit, after_seq: afterSeq });
  }

  runs(spaceId: string, afterSeq?: number): Promise<{ runs: Run[] }> {
    return this.call("GET", `/v1/spaces/${encodeURIComponent(spaceId)}/runs`, undefined, { after_seq: afterSeq, limit: 20 });
  }

  run(runId: string, afterSeq?: number): Promise<Run> {
    return this.call("GET", `/v1/runs/${encodeURIComponent(runId)}`, undefined, { after_seq: afterSeq });
  }

  post(event: Record<string, unknown>): Promise<Ack> {
    return this.call("POST", "/v1/events", event);
  }

  eventAt(seq: number): Promise<{ events: AnyEvent[] }> {
    return this.call("GET", "/v1/events", undefined, { since: seq - 1, limit: 1 });
  }

  change(spaceId: string, change: { title?: string; state?: "open" | "closed" }): Promise<Ack> {
    return this.call("PATCH", `/v1/spaces/${encodeURIComponent(spaceId)}`, change);
  }

  lock(spaceId: string, locked: boolean): Promise<Ack> {
    return this.call("POST", `/v1/spaces/${encodeURIComponent(spaceId)}/lock`, { locked });
  }

  erase(spaceId: string): Promise<Ack> {
    return this.call("DELETE", `/v1/spaces/${encodeURIComponent(spaceId)}`);
  }

  addMember(spaceId: string, participantId: string): Promise<Ack> {
    return this.call("POST", `/v1/spaces/${encodeURIComponent(spaceId)}/members`, { participant_id: participantId });
  }

  removeMember(spaceId: string, participantId: string): Promise<Ack> {
    return this.call("DELETE", `/v1/spaces/${encodeURIComponent(spaceId)}/members/${encodeURIComponent(participantId)}`);
  }

  /** The job's spend against the room's ceiling, and whether its agents are paused. */
  spend(spaceId: string): Promise<JobSpend & { paused?: Pause | null }> {
    return this.call("GET", `/v1/spaces/${encodeURIComponent(spaceId)}/spend`);
  }

  /** What the room allows a job, in dollars; null for the default. */
  setCeiling(spaceId: string, usd: number | null): Promise<Ack> {
    return this.call("POST", `/v1/spaces/${encodeURIComponent(spaceId)}/spend-ceiling`, { usd });
  }

  /** Choose the room's lead, one of its agents, or none (ADR 0090). */
  setLead(spaceId: string, agentId: string | null): Promise<Ack> {
    return this.call("POST", `/v1/spaces/${encodeURIComponent(spaceId)}/lead`, { agent_id: agentId });
  }

  /** Move an agent into a room (it leaves the one it is in). */
  moveAgent(agentId: string, spaceId: string): Promise<{ id: string; space_id: string | null }> {
    return this.call("POST", `/v1/agents/${encodeURIComponent(agentId)}/move`, { space_id: spaceId });
  }

  /** Ask a harness that declared restarts to restart. */
  restart(harnessId: string): Promise<{ status: string }> {
    return this.call("POST", `/v1/harnesses/${encodeURIComponent(harnessId)}/restart`);
  }

  // --- people, invites and devices (docs/adr/0125) ---

  invite(body: { name: string; email?: string; role: string }): Promise<Invite & { url: string }> {
    return this.call("POST", "/v1/invites", body);
  }

  invites(): Promise<{ invites: Invite[] }> {
    return this.call("GET", "/v1/invites");
  }

  withdrawInvite(inviteId: string): Promise<unknown> {
    return this.call("DELETE", `/v1/invites/${encodeURIComponent(inviteId)}`);
  }

  devices(participantId?: string): Promise<{ devices: Device[] }> {
    return this.call("GET", "/v1/devices", undefined, { participant_id: participantId });
  }

  /** An owner's or admin's change of a person; deactivating names who takes the group rooms they own (rooms_to). */
  changePerson(
    participantId: string,
    change: { role?: string; active?: boolean; rooms_to?: string },
  ): Promise<{ disconnected: string[]; rooms_handed: string[] }> {
    return this.call("PATCH", `/v1/people/${encodeURIComponent(participantId)}`, change);
  }

  /** The caller's own name, role and time zone (an IANA name, or null until they say one). */
  me(): Promise<Profile> {
    return this.call("GET", "/v1/me");
  }

  changeMe(change: { name?: string; time_zone?: string }): Promise<{ name: string | null; previous_name: string | null; time_zone: string | null }> {
    return this.call("PATCH", "/v1/me", change);
  }

  revokeDevice(deviceId: string): Promise<unknown> {
    return this.call("DELETE", `/v1/devices/${encodeURIComponent(deviceId)}`);
  }

  pairingCode(): Promise<{ code: string; url: string; expires_at: string }> {
    return this.call("POST", "/v1/pairing-codes");
  }

  caps(): Promise<Caps> {
    return this.call("GET", "/v1/uploads/caps");
  }

  files(spaceId: string): Promise<{ files: RoomFile[] }> {
    return this.call("GET", `/v1/spaces/${encodeURIComponent(spaceId)}/files`);
  }

  /**
   * Send a file's bytes (POST /v1/uploads), reporting how much has gone. XMLHttpRequest,
   * since fetch says nothing about an upload's progress. `abort` stops it.
   */
  upload(file: File, onProgress: (sent: number) => void, opts: { voiceNote?: boolean } = {}): { done: Promise<Uploaded>; abort: () => void } {
    const xhr = new XMLHttpRequest();
    const url = new URL("/v1/uploads", location.origin);
    url.searchParams.set("name", file.name);
    // A recording posted as a voice note: Chips measures it and hears it (ADR 0137).
    if (opts.voiceNote) url.searchParams.set("voice_note", "true");
    const done = new Promise<Uploaded>((resolve, reject) => {
      void this.bearer().then((token) => sendIt(token), reject);
      const sendIt = (token: string) => {
      xhr.open("POST", url);
      xhr.setRequestHeader("Authorization", `Bearer ${token}`);
      xhr.upload.onprogress = (e) => onProgress(e.loaded);
      xhr.onload = () => {
        let data: { code?: string; message?: string } & Partial<Uploaded> = {};
        try {
          data = JSON.parse(xhr.responseText || "{}");
        } catch {
          /* an answer that is not JSON says only its status */
        }
        if (xhr.status === 201) resolve(data as Uploaded);
        else reject(new ApiError(xhr.status, data.code ?? "unavailable", data.message ?? `The upload failed (HTTP ${xhr.status}).`));
      };
      xhr.onerror = () => reject(new ApiError(0, "unavailable", "Chips can't be reached; the file was not sent."));
      xhr.onabort = () => reject(new ApiError(0, "aborted", "Taken off."));
      xhr.send(file);
      };
    });
    return { done, abort: () => xhr.abort() };
  }

  /** A file's bytes with the person's own token (for a link that has run out). */
  async blob(attachmentId: string, thumbnail = false): Promise<Blob> {
    const path = `/v1/attachments/${encodeURIComponent(attachmentId)}${thumbnail ? "/thumbnail" : ""}`;
    const r = await fetch(new URL(path, location.origin), { headers: { Authorization: `Bearer ${await this.bearer()}` } });
    if (!r.ok) throw new ApiError(r.status, "not_found", r.status === 404 ? "That file is no longer here." : "That file can't be opened now.");
    return r.blob();
  }

  /** Whether a route exists on this gateway (search, attachments land separately). */
  async has(path: string): Promise<boolean> {
    try {
      const r = await fetch(new URL(path, location.origin), { headers: { Authorization: `Bearer ${await this.bearer()}` } });
      return r.status !== 404;
    } catch {
      return false;
    }
  }
}
