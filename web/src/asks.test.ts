import { describe, expect, it } from "vitest";
import { cardState, closedWords, decidesWords, harnessOf, msUntilExpiry, riskWord, type Viewer } from "./asks";
import type { Participant, Run, RunCard } from "./protocol";

const person = (id: string, name: string): Participant => ({ participant_id: id, kind: "person", name, role: "member", owner_id: null });
const participants = new Map<string, Participant>([
  ["usr_arjun", person("usr_arjun", "Arjun Rao")],
  ["usr_maya", person("usr_maya", "Maya Chen")],
  ["usr_dev", person("usr_dev", "Dev Patel")],
  ["hrn_scout", { participant_id: "hrn_scout", kind: "harness", name: "Scout", role: null, owner_id: "usr_arjun" }],
  ["agt_j1", { participant_id: "agt_j1", kind: "agent", name: "J1", role: null, owner_id: "hrn_scout", harness_id: "hrn_scout" }],
]);
const nameOf = (id: string) => participants.get(id)?.name ?? "Someone";
const NOW = Date.parse("2026-12-03T12:00:00Z");

const approval = (over: Partial<RunCard> = {}, body: Record<string, unknown> = {}): RunCard => ({
  kind: "approval",
  id: "perm_1",
  run_id: "run_1",
  space_id: "spc_1",
  harness_id: "hrn_scout",
  asked_seq: 5,
  expires_at: null,
  card: { action: "deploy.production", ...body },
  answered_by: null,
  answer: null,
  answered_seq: null,
  ...over,
});
const question = (over: Partial<RunCard> = {}): RunCard => ({ ...approval(over), kind: "question", id: "q_1", card: { prompt: "Which region?" }, ...over });
const run = (state: string, harness_id = "hrn_scout"): Run => ({
  run_id: "run_1",
  space_id: "spc_1",
  harness_id,
  goal: "Ship",
  state,
  status: { phase: null, verb: null, progress: null, text: null },
  summary: null,
  why: null,
  started_seq: 1,
});
const as = (me: string | null, over: Partial<Viewer> = {}): Viewer => ({ me, inRoom: true, participants, now: NOW, ...over });

describe("who decides an approval (check_decider)", () => {
  it("is the harness's owner", () => {
    expect(cardState(approval(), run("running"), as("usr_arjun"))).toEqual({ state: "open" });
  });

  it("is a person the card names as an answerer, besides the owner", () => {
    const card = approval({}, { answerers: ["usr_maya"] });
    expect(cardState(card, run("running"), as("usr_maya"))).toEqual({ state: "open" });
    expect(cardState(card, run("running"), as("usr_arjun"))).toEqual({ state: "open" });
  });

  it("is nobody else in the room: they are told whose it is, owner first", () => {
    const card = approval({}, { answerers: ["usr_maya"] });
    expect(cardState(card, run("running"), as("usr_dev"))).toEqual({ state: "theirs", deciders: ["usr_arjun", "usr_maya"] });
    expect(decidesWords(approval(), run("running"), participants, nameOf)).toBe("For Arjun Rao to decide.");
    expect(decidesWords(card, run("running"), participants, nameOf)).toBe("For Arjun Rao or Maya Chen to decide.");
    const three = approval({}, { answerers: ["usr_maya", "usr_dev"] });
    expect(decidesWords(three, run("running"), participants, nameOf)).toBe("For Arjun Rao, Maya Chen or Dev Patel to decide.");
  });

  it("names the owner once when the card names the owner too", () => {
    const card = approval({}, { answerers: ["usr_arjun", "usr_maya"] });
    expect(decidesWords(card, run("running"), participants, nameOf)).toBe("For Arjun Rao or Maya Chen to decide.");
  });

  it("reads an agent's run as its harness's (ADR 0070)", () => {
    const card = approval({ harness_id: undefined });
    expect(harnessOf(card, run("running", "agt_j1"), participants)).toBe("hrn_scout");
    expect(cardState(card, run("running", "agt_j1"), as("usr_arjun"))).toEqual({ state: "open" });
    expect(cardState(card, run("running", "agt_j1"), as("usr_maya")).state).toBe("theirs");
  });

  it("says the harness's owner when the directory does not name them", () => {
    const strangers = new Map([["hrn_scout", { ...participants.get("hrn_scout")!, owner_id: null }]]);
    expect(cardState(approval(), run("running"), as("usr_arjun", { participants: strangers }))).toEqual({ state: "theirs", deciders: [] });
    expect(decidesWords(approval(), run("running"), strangers, nameOf)).toBe("For Scout’s owner to decide.");
  });

  it("is not somebody outside the room, owner or not (check_member)", () => {
    expect(cardState(approval(), run("running"), as("usr_arjun", { inRoom: false })).state).toBe("theirs");
    expect(cardState(approval(), run("running"), as(null))).toEqual({ state: "theirs", deciders: ["usr_arjun"] });
  });
});

describe("who answers a question", () => {
  it("is anybody in the room: no owner or answerers rule", () => {
    for (const me of ["usr_arjun", "usr_maya", "usr_dev"]) expect(cardState(question(), run("running"), as(me))).toEqual({ state: "open" });
  });

  it("is nobody outside the room", () => {
    expect(cardState(question(), run("running"), as("usr_dev", { inRoom: false })).state).toBe("theirs");
  });
});

describe("whether a card still takes an answer", () => {
  it("takes none once answered (first answer wins)", () => {
    expect(cardState(approval({ answered_seq: 9, answered_by: "usr_arjun" }), run("running"), as("usr_arjun"))).toEqual({ state: "answered" });
    expect(cardState(question({ answered_seq: 9, answered_by: "usr_maya" }), run("completed"), as("usr_arjun"))).toEqual({ state: "answered" });
  });

  it("takes none once the run that asked it has ended, for anyone", () => {
    for (const state of ["completed", "failed", "cancelled"]) {
      expect(cardState(approval(), run(state), as("usr_arjun"))).toEqual({ state: "ended" });
      expect(cardState(approval(), run(state), as("usr_dev"))).toEqual({ state: "ended" });
      expect(cardState(question(), run(state), as("usr_dev"))).toEqual({ state: "ended" });
    }
    expect(closedWords(approval(), "ended")).toBe("The run ended before anyone decided.");
    expect(closedWords(question(), "ended")).toBe("The run ended before anyone answered.");
  });

  it("takes answers while the run is paused, and while the room has not read the run", () => {
    expect(cardState(approval(), run("paused"), as("usr_arjun"))).toEqual({ state: "open" });
    expect(cardState(approval(), undefined, as("usr_arjun"))).toEqual({ state: "open" });
  });

  it("takes no decision on an approval at or after its expires_at", () => {
    const at = new Date(NOW).toISOString();
    expect(cardState(approval({ expires_at: at }), run("running"), as("usr_arjun", { now: NOW - 1 }))).toEqual({ state: "open" });
    expect(cardState(approval({ expires_at: at }), run("running"), as("usr_arjun"))).toEqual({ state: "expired" });
    expect(cardState(approval({ expires_at: at }), run("running"), as("usr_dev"))).toEqual({ state: "expired" });
    expect(closedWords(approval(), "expired")).toBe("Expired: Chips stopped waiting.");
  });

  it("says how long until an approval expires, so the card redraws then, and nothing otherwise", () => {
    const soon = new Date(NOW + 30_000).toISOString();
    expect(msUntilExpiry(approval({ expires_at: soon }), NOW)).toBe(30_000);
    expect(msUntilExpiry(approval({ expires_at: soon }), NOW + 30_000)).toBeNull();
    expect(msUntilExpiry(approval({ expires_at: soon, answered_seq: 9 }), NOW)).toBeNull();
    expect(msUntilExpiry(approval(), NOW)).toBeNull();
    expect(msUntilExpiry(question({ expires_at: soon }), NOW)).toBeNull();
  });
});

describe("an approval's risk", () => {
  it("is the word the request gave", () => {
    expect(riskWord(approval({}, { risk: "high" }))).toBe("high");
  });

  it("is none when the request gave none (not a guessed medium)", () => {
    expect(riskWord(approval())).toBeNull();
    expect(riskWord(approval({}, { risk: null }))).toBeNull();
    expect(riskWord(approval({}, { risk: "  " }))).toBeNull();
  });
});
