import { describe, expect, it, vi } from "vitest";
import { Live, SeqGate } from "./live";
import { suggestions } from "./composer";
import type { AnyEvent } from "./protocol";

const at = (seq: number) => ({ seq }) as AnyEvent;

describe("the seq gate", () => {
  it("hands on each event once, in order, across a resume that repeats some", () => {
    const gate = new SeqGate(4);
    expect(gate.pass([at(3), at(4), at(5), at(7)]).map((e) => e.seq)).toEqual([5, 7]);
    // A reconnect resumes from 7; a replay that overlaps repeats nothing.
    expect(gate.pass([at(7), at(9)]).map((e) => e.seq)).toEqual([9]);
    expect(gate.last).toBe(9);
  });

  it("starts from the first event when it knows no seq", () => {
    const gate = new SeqGate();
    expect(gate.pass([at(1), at(2)]).map((e) => e.seq)).toEqual([1, 2]);
  });
});

describe("the composer's picker", () => {
  const people = [
    { name: "Maya Chen", kind: "person" },
    { name: "Ledger", kind: "harness" },
  ];
  it("offers members for an @ by handle or name", () => {
    const offer = suggestions("hi @le", people)!;
    expect(offer.picks.map((p) => p.insert)).toEqual(["@Ledger "]);
    expect(offer.from).toBe(3);
    expect(suggestions("hi @", people)!.picks.map((p) => p.label)).toEqual(["Maya Chen", "Ledger", "all"]);
    expect(suggestions("thanks @ledger", people)).toBeNull(); // typed in full: Enter sends
  });
  it("offers the commands the door reads", () => {
    expect(suggestions("/ar", people)!.picks.map((p) => p.label)).toEqual(["/archive"]);
    expect(suggestions("/", people)!.picks.length).toBeGreaterThan(6);
    expect(suggestions("hello", people)).toBeNull();
  });
});

describe("the socket's notification frames", () => {
  it("hands a notification frame to the inbox, not to the events", async () => {
    class FakeSocket {
      static last: FakeSocket | null = null;
      sent: string[] = [];
      onopen: (() => void) | null = null;
      onmessage: ((m: { data: string }) => void) | null = null;
      onclose: (() => void) | null = null;
      constructor(readonly url: string) {
        FakeSocket.last = this;
      }
      send(s: string) {
        this.sent.push(s);
      }
      close() {}
    }
    vi.stubGlobal("WebSocket", FakeSocket);
    vi.stubGlobal("location", { protocol: "http:", host: "chips.test" });
    const told: Record<string, unknown>[] = [];
    const events: unknown[] = [];
    const live = new Live({
      ticket: async () => "t",
      since: () => null,
      onHello: () => {},
      onEvents: (e) => events.push(...e),
      onAck: () => {},
      onError: () => {},
      onReceipt: () => {},
      onState: () => {},
      onNotification: (f) => told.push(f),
    });
    live.start();
    await vi.waitFor(() => expect(FakeSocket.last).not.toBeNull());
    const frame = { type: "notification", notification: { id: "ntf_1" }, unread: 2 };
    FakeSocket.last!.onmessage!({ data: JSON.stringify(frame) });
    FakeSocket.last!.onmessage!({ data: JSON.stringify({ frame: "notification", notification: { id: "ntf_2" }, unread: 1 }) });
    await vi.waitFor(() => expect(told).toHaveLength(2));
    expect(told[0]).toEqual(frame);
    expect(events).toEqual([]);
    live.stop();
    vi.unstubAllGlobals();
  });
});
