import { describe, expect, it } from "vitest";
import { foldChange, heardLine, insertLine, lineOf, moneyWords, reactionsOf, reauthor, systemLine, threadName } from "./lines";
import type { AnyEvent, Line } from "./protocol";

const names: Record<string, string> = { usr_a: "Arjun Rao", usr_m: "Maya Chen", hrn_l: "Ledger", agt_j1: "J1", agt_j2: "J2" };
const nameOf = (id: string) => names[id] ?? "Someone";
let seq = 10;
function ev(type: string, actor: string, fields: Record<string, unknown>): AnyEvent {
  seq += 1;
  return { v: 1, id: `evt_01J${seq}`, seq, ts: "2026-12-01T10:00:00Z", workspace_id: "ws_1", actor: { kind: actor.startsWith("hrn") ? "harness" : "person", id: actor }, type, ...fields } as AnyEvent;
}

describe("system lines", () => {
  it("say who did what, as the read model does", () => {
    expect(systemLine(ev("membership.added", "usr_a", { participant_id: "usr_m" }), nameOf)).toBe("Arjun Rao added Maya Chen");
    expect(systemLine(ev("membership.removed", "usr_m", { participant_id: "usr_m" }), nameOf)).toBe("Maya Chen left");
    expect(systemLine(ev("space.updated", "usr_a", { state: "closed" }), nameOf)).toBe("Arjun Rao archived the room");
    expect(systemLine(ev("space.updated", "usr_a", { title: "Launch" }), nameOf)).toBe("Arjun Rao renamed the room to “Launch”");
    expect(systemLine(ev("space.lock_set", "usr_a", { locked: true }), nameOf)).toBe("Arjun Rao locked the room's changes");
    expect(systemLine(ev("space.lead_set", "usr_a", { agent_id: "agt_j1" }), nameOf)).toBe("Arjun Rao made J1 the room’s lead");
    expect(systemLine(ev("space.lead_set", "usr_a", { agent_id: null }), nameOf)).toBe("Arjun Rao left the room without a lead");
    expect(systemLine(ev("lead.handed", "sys", { agent_id: "agt_j1", message_id: "msg_1", said_by: "agt_j2" }), nameOf)).toBe("J1 took it as the lead: it was nobody’s turn");
    expect(systemLine(ev("message.post", "usr_a", { text: "hi" }), nameOf)).toBeNull();
  });

  it("draw nothing for a harness in or out only behind its agents, as the read model draws none", () => {
    expect(systemLine(ev("membership.added", "usr_a", { participant_id: "hrn_l", standing: "agents" }), nameOf)).toBeNull();
    expect(systemLine(ev("membership.removed", "usr_a", { participant_id: "hrn_l", standing: "agents" }), nameOf)).toBeNull();
    expect(systemLine(ev("membership.added", "usr_a", { participant_id: "hrn_l" }), nameOf)).toBe("Arjun Rao added Ledger");
  });
});

describe("an agent attached in another's place", () => {
  it("is the author of what that one said, not of what it did to the room", () => {
    const said = lineOf(ev("message.post", "hrn_l", { space_id: "spc_1", message_id: "msg_l", text: "F is drawn." }), nameOf, null)!;
    const added = lineOf(ev("membership.added", "hrn_l", { space_id: "spc_1", participant_id: "usr_m" }), nameOf, null)!;
    const maya = lineOf(ev("message.post", "usr_m", { space_id: "spc_1", message_id: "msg_m", text: "Thanks" }), nameOf, null)!;
    const lines = [said, added, maya];
    const replaced = ev("membership.replaced", "hrn_l", { space_id: "spc_1", participant_id: "agt_j1", replaced: "hrn_l" });
    expect(reauthor(lines, replaced).map((l) => l.author_id)).toEqual(["agt_j1", "hrn_l", "usr_m"]);
    const elsewhere = ev("membership.replaced", "hrn_l", { space_id: "spc_1", participant_id: "agt_j1", replaced: "agt_j2" });
    expect(reauthor(lines, elsewhere)).toBe(lines);
  });
});

describe("lines from events", () => {
  it("a post is a line with its card and, on my words, its receipt", () => {
    const e = ev("message.post", "usr_a", {
      space_id: "spc_1",
      message_id: "msg_x",
      kind: "status",
      status: { phase: "working", verb: "Reading" },
      run_receipt: { idempotency_key: "k", disposition: "queued", run_ids: ["run_1"] },
    });
    const line = lineOf(e, nameOf, "usr_a")!;
    expect(line.id).toBe("msg_x");
    expect(line.card).toEqual({ phase: "working", verb: "Reading" });
    expect(line.receipt).toBe("queued");
    expect(lineOf(e, nameOf, "usr_m")!.receipt).toBeUndefined();
  });

  it("a post carries its files and who it was for; taken back, its files go", () => {
    const file = { attachment_id: "att_1", name: "a.png", kind: "photo", mime_type: "image/png", byte_size: 10, sha256: "x", version: 1, url: "u" };
    const line = lineOf(ev("message.post", "usr_a", { space_id: "spc_1", message_id: "msg_f", attachments: [file], addressed_to: ["hrn_l"] }), nameOf, "usr_a")!;
    expect(line.attachments).toEqual([file]);
    expect(line.addressed_to).toEqual(["hrn_l"]);
    expect(foldChange(line, ev("message.deleted", "usr_a", { message_id: "msg_f" }))).toBe(true);
    expect(line.attachments).toBeUndefined();
    expect(lineOf(ev("message.post", "usr_a", { space_id: "spc_1", text: "hi" }), nameOf, "usr_a")!.attachments).toBeUndefined();
  });

  it("edits, take-backs, pins and reactions fold into the line", () => {
    const line = lineOf(ev("message.post", "usr_a", { space_id: "s", message_id: "msg_1", text: "hi" }), nameOf, null)!;
    foldChange(line, ev("message.edited", "usr_a", { message_id: "msg_1", text: "hello" }));
    expect([line.text, line.edited]).toEqual(["hello", true]);
    foldChange(line, ev("message.pinned", "usr_m", { message_id: "msg_1" }));
    foldChange(line, ev("feedback", "usr_m", { message_id: "msg_1", kind: "reaction", emoji: "🎉" }));
    foldChange(line, ev("feedback", "usr_a", { message_id: "msg_1", kind: "reaction", emoji: "🎉" }));
    expect(reactionsOf(line)).toEqual([["🎉", ["usr_m", "usr_a"]]]);
    foldChange(line, ev("feedback", "usr_m", { message_id: "msg_1", kind: "reaction", emoji: "🎉", withdrawn: true }));
    expect(reactionsOf(line)).toEqual([["🎉", ["usr_a"]]]);
    foldChange(line, ev("message.deleted", "usr_a", { message_id: "msg_1" }));
    expect([line.deleted, line.text, line.pinned, line.feedback.length]).toEqual([true, null, false, 0]);
    expect(foldChange(line, ev("message.edited", "usr_a", { message_id: "msg_1", text: "again" }))).toBe(false);
  });

  it("the agents whose turns heard a message while working say so beneath it, each once", () => {
    const line = lineOf(ev("message.post", "usr_a", { space_id: "spc_1", message_id: "msg_h", text: "@J2 and K?" }), nameOf, "usr_a")!;
    expect(heardLine(line, nameOf)).toBeNull();
    expect(foldChange(line, ev("message.heard", "agt_j1", { message_id: "msg_h", run_id: "run_1" }))).toBe(true);
    expect(heardLine(line, nameOf)).toBe("J1 heard this while working");
    expect(foldChange(line, ev("message.heard", "agt_j1", { message_id: "msg_h", run_id: "run_1" }))).toBe(false);
    foldChange(line, ev("message.heard", "agt_j2", { message_id: "msg_h", run_id: "run_2" }));
    expect(heardLine(line, nameOf)).toBe("J1 and J2 heard this while working");
  });

  it("insert keeps seq order and replaces by id", () => {
    const mk = (id: string, s: number) => ({ id, seq: s }) as Line;
    const lines = insertLine(insertLine(insertLine([], mk("a", 3)), mk("b", 1)), mk("c", 2));
    expect(lines.map((l) => l.id)).toEqual(["b", "c", "a"]);
    expect(insertLine(lines, mk("c", 2)).length).toBe(3);
  });
});

describe("money", () => {
  it("says cents from a cent up and a cheap run's first figure below it, never $0.00", () => {
    expect(moneyWords(1.25)).toBe("$1.25");
    expect(moneyWords(0.01)).toBe("$0.01");
    expect(moneyWords(0)).toBe("$0.00");
    expect(moneyWords(0.002)).toBe("$0.002");
    expect(moneyWords(0.0024)).toBe("$0.0024");
    expect(moneyWords(0.00041)).toBe("$0.00041");
    expect(moneyWords(0.0000001)).toBe("under $0.000001");
    expect(moneyWords("3")).toBeNull();
    expect(moneyWords(undefined)).toBeNull();
  });
});

describe("a thread's name", () => {
  it("is the first words of the message it was opened on, without their markup", () => {
    expect(threadName("Which day do we launch?", "Launch")).toBe("Which day do we launch?");
    expect(threadName("Can **you** check the totals in the March ledger before Friday", "Ledger")).toBe("Can you check the totals in…");
    expect(threadName("  one\n\ntwo  ", "Ledger")).toBe("one two");
  });
  it("is cut at a word and never ends on a comma", () => {
    expect(threadName("First, second, third, fourth, fifth, sixth, seventh", "R")).toBe("First, second, third, fourth, fifth…");
    expect(threadName("Supercalifragilisticexpialidocious-and-then-some-more-words-here", "R")).toBe("Supercalifragilisticexpialidocious-and…");
  });
  it("says which room when its message was taken back or has no words", () => {
    expect(threadName(null, "Launch")).toBe("Thread in Launch");
    expect(threadName("   ", null)).toBe("Thread in a room");
  });
});
