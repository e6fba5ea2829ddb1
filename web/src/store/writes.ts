// Writing: an event sent over the socket and its answer (an ack with its seq, a refusal,
// a receipt), words drawn at once as sending until they come back logged, and a room
// opened over HTTP. Part of the store (store.ts).
import { ApiError } from "../api";
import type { LinkedFile, Uploaded } from "../files";
import { newKey } from "../live";
import { Lists } from "./lists";

export abstract class Writes extends Lists {
  /** Keys of my writes, by the seq the ack gave (to know my own line when it arrives). */
  protected keyBySeq = new Map<number, string>();
  private seqByKey = new Map<string, number>();
  protected receipts = new Map<string, "queued" | "steered">();
  private waiters = new Map<string, { resolve: (seq: number | null) => void; reject: (e: Error) => void }>();

  /** Send an event over the socket; resolves with its seq when acked, rejects if refused. */
  send(event: Record<string, unknown>): Promise<number | null> {
    const key = newKey();
    return new Promise((resolve, reject) => {
      this.waiters.set(key, { resolve, reject });
      this.live!.send({ ...event, idempotency_key: key });
    });
  }

  /**
   * Post words, files or both: drawn at once as sending, then as the logged line when it
   * comes back. `to` is the composer's pick (harness ids, or "everyone"), sent only when
   * the person made one (docs/product/spaces.md, Several harnesses and people in one space).
   */
  say(spaceId: string, text: string, replyTo: string | null, extra: { uploads?: Uploaded[]; to?: string[] } = {}): Promise<number | null> {
    const key = newKey();
    const event: Record<string, unknown> = { type: "message.post", space_id: spaceId, idempotency_key: key };
    if (text) event["text"] = text;
    if (replyTo) event["reply_to"] = replyTo;
    if (extra.uploads?.length) event["upload_ids"] = extra.uploads.map((u) => u.upload_id);
    if (extra.to?.length) event["to"] = extra.to;
    if (!text.trim().startsWith("/") && !/^wreply\b/i.test(text.trim())) {
      const attachments: LinkedFile[] = (extra.uploads ?? []).map((u) => ({
        attachment_id: u.upload_id,
        name: u.name,
        mime_type: u.mime_type,
        kind: u.kind,
        byte_size: u.byte_size,
        sha256: "",
        version: 0,
      }));
      this.sending.set(key, {
        id: `sending:${key}`,
        space_id: spaceId,
        seq: Number.MAX_SAFE_INTEGER,
        kind: "text",
        author_id: this.me?.id ?? "",
        text,
        reply_to: replyTo,
        ts: new Date().toISOString(),
        ...(attachments.length ? { attachments } : {}),
        edited: false,
        deleted: false,
        pinned: false,
        feedback: [],
        pending: true,
      });
    }
    this.changed();
    return new Promise((resolve, reject) => {
      this.waiters.set(key, { resolve, reject });
      this.live!.send(event);
    });
  }

  protected acked(key: string, seq: number | null): void {
    if (seq !== null) {
      this.keyBySeq.set(seq, key);
      this.seqByKey.set(key, seq);
      if (this.gate.last !== null && seq <= this.gate.last) this.sending.delete(key);
    } else {
      this.sending.delete(key);
    }
    this.waiters.get(key)?.resolve(seq);
    this.waiters.delete(key);
    this.changed();
  }

  protected refused(key: string | undefined, code: string, message: string): void {
    if (key) {
      const line = this.sending.get(key);
      if (line) this.sending.set(key, { ...line, pending: false, failed: message });
      const waiter = this.waiters.get(key);
      this.waiters.delete(key);
      if (waiter) waiter.reject(new ApiError(0, code, message));
      else this.toast(message);
    } else if (code !== "unauthorized" && code !== "too_far_behind") {
      this.toast(message);
    }
    this.changed();
  }

  protected receipt(key: string, disposition: "queued" | "steered"): void {
    this.receipts.set(key, disposition);
    const seq = this.seqByKey.get(key);
    if (seq === undefined) return;
    for (const room of this.rooms.values()) {
      const line = room.lines.find((l) => l.seq === seq);
      if (line && !line.receipt) room.lines = room.lines.map((l) => (l === line ? { ...l, receipt: disposition } : l));
    }
    this.changed();
  }

  dismissFailed(key: string): void {
    this.sending.delete(key);
    this.changed();
  }

  /** Open a room (or a thread) and wait for its id from the log. */
  async create(event: Record<string, unknown>): Promise<string> {
    const ack = await this.api!.post({ ...event, idempotency_key: newKey("open") });
    const seq = ack.seq!;
    const { events } = await this.api!.eventAt(seq);
    const created = events.find((e) => e.seq === seq);
    const id = created ? String((created as unknown as Record<string, unknown>)["space_id"]) : "";
    this.refreshList(seq);
    return id;
  }
}
