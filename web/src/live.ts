// The socket (docs/product/websocket.md): a single-use ticket, hello, subscribe with the last seq
// seen, and back again after any drop — every event once, in seq order, none missed.
// Writes wait in an outbox until the server answers for their key, and are sent again on
// every new socket, so a reconnect loses no words and repeats none (the key makes a
// resend a duplicate).
import type { AnyEvent, Person, ServerFrame } from "./protocol";

export type LiveState = "connecting" | "live" | "reconnecting" | "signed-out";

export interface LiveHandlers {
  ticket(): Promise<string>;
  /** The seq to resume after, or null to start from now. */
  since(): number | null;
  onHello(person: Person, workspaceId: string, spaces: string[]): Promise<void> | void;
  onEvents(events: AnyEvent[]): void;
  onAck(key: string, seq: number | null, duplicate: boolean): void;
  onError(key: string | undefined, code: string, message: string): void;
  onReceipt(key: string, disposition: "queued" | "steered"): void;
  onState(state: LiveState): void;
  /** A notification made or changed for this person (issue #29; docs/notifications.md). */
  onNotification?(frame: Record<string, unknown>): void;
}

/** Drops every event at or below the last seq handed on: nothing twice, in order. */
export class SeqGate {
  constructor(public last: number | null = null) {}
  pass(events: AnyEvent[]): AnyEvent[] {
    const out: AnyEvent[] = [];
    for (const e of events) {
      if (this.last !== null && e.seq <= this.last) continue;
      this.last = e.seq;
      out.push(e);
    }
    return out;
  }
}

let counter = 0;
export function newKey(prefix = "web"): string {
  counter += 1;
  const rand = crypto.getRandomValues(new Uint32Array(2));
  return `${prefix}-${Date.now().toString(36)}-${rand[0]!.toString(36)}${rand[1]!.toString(36)}-${counter}`;
}

export class Live {
  private ws: WebSocket | null = null;
  private ready = false;
  private stopped = false;
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  readonly outbox = new Map<string, Record<string, unknown>>();
  state: LiveState = "connecting";

  constructor(private readonly h: LiveHandlers) {}

  start(): void {
    this.stopped = false;
    void this.open();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.ws?.close();
    this.ws = null;
  }

  /** Send an event (its key inside it); kept until the server answers for the key. */
  send(event: Record<string, unknown>): string {
    const key = (event["idempotency_key"] as string | undefined) ?? newKey();
    const full = { ...event, idempotency_key: key };
    this.outbox.set(key, full);
    if (this.ready) this.write(full);
    return key;
  }

  /** The server answered for a key: it leaves the outbox. */
  settle(key: string): void {
    this.outbox.delete(key);
  }

  private setState(state: LiveState): void {
    if (this.state === state) return;
    this.state = state;
    this.h.onState(state);
  }

  private write(event: Record<string, unknown>): void {
    this.ws?.send(JSON.stringify({ frame: "event", event }));
  }

  private async open(): Promise<void> {
    if (this.stopped) return;
    let ticket: string;
    try {
      ticket = await this.h.ticket();
    } catch (err) {
      if ((err as { status?: number }).status === 401) {
        this.setState("signed-out");
        return;
      }
      this.retry();
      return;
    }
    if (this.stopped) return;
    // Same origin as the page, so the gateway's Origin check lets it in (docs/architecture/design.md §7).
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${scheme}//${location.host}/v1/ws?ticket=${encodeURIComponent(ticket)}`);
    this.ws = ws;
    ws.onopen = () => {
      ws.send(
        JSON.stringify({
          frame: "hello",
          protocol: { min: 1, max: 1 },
          client: { name: "chips-web", version: "0.1.0" },
          accepts: ["events"],
        }),
      );
    };
    ws.onmessage = (msg) => void this.onFrame(ws, JSON.parse(String(msg.data)) as ServerFrame);
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.ready = false;
      this.retry();
    };
  }

  private retry(): void {
    if (this.stopped) return;
    this.setState("reconnecting");
    this.attempt += 1;
    const delay = Math.min(5000, 250 * 2 ** Math.min(this.attempt, 5)) * (0.75 + Math.random() / 2);
    this.timer = setTimeout(() => void this.open(), delay);
  }

  private async onFrame(ws: WebSocket, frame: ServerFrame): Promise<void> {
    const raw = frame as unknown as Record<string, unknown>;
    if (raw["type"] === "notification" || raw["frame"] === "notification") {
      this.h.onNotification?.(raw);
      return;
    }
    switch (frame.frame) {
      case "hello": {
        if (frame.person === undefined) {
          this.setState("signed-out");
          ws.close();
          return;
        }
        await this.h.onHello(frame.person, frame.workspace_id, frame.spaces);
        const since = this.h.since();
        ws.send(JSON.stringify(since === null ? { frame: "subscribe", workspace_id: frame.workspace_id } : { frame: "subscribe", workspace_id: frame.workspace_id, since }));
        this.ready = true;
        this.attempt = 0;
        this.setState("live");
        // What was never answered goes again, before anything new (docs/product/websocket.md, Writing).
        for (const event of this.outbox.values()) this.write(event);
        return;
      }
      case "event":
        this.h.onEvents([frame.event]);
        return;
      case "events":
        this.h.onEvents(frame.events);
        return;
      case "ack":
        this.settle(frame.idempotency_key);
        this.h.onAck(frame.idempotency_key, frame.seq, frame.duplicate);
        return;
      case "error":
        // A refused ticket closes the socket and the next ticket asks again: only a 401
        // on that POST signs the person out.
        if (frame.idempotency_key) this.settle(frame.idempotency_key);
        this.h.onError(frame.idempotency_key, frame.code, frame.message);
        return;
      case "receipt":
        this.h.onReceipt(frame.idempotency_key, frame.disposition);
        return;
    }
  }
}
