import { describe, expect, it } from "vitest";
import { cardState, closedWords, decidedWords, decidesWords, expiredWords, lineActs, lockedNote, msUntilExpiry, riskWord, type RoomMay } from "./may";
import type { RunCard, Sheet } from "./protocol";

// The sheet's `may` as the gateway answers it (GET /v1/spaces/:id): the app reads it and
// decides nothing itself (ADR 0142).
const may = (over: Partial<RoomMay> = {}): RoomMay => ({
  rename: true,
  archive: true,
  unarchive: false,
  lock: true,
  unlock: false,
  delete: "erase",
  pause: true,
  pin: true,
  take_back: false,
  remove: [],
  add: [],
  cards: [],
  ...over,
});
const sheet = (over: Partial<Sheet> = {}): Sheet => ({ kind: "group", locked: false, ...over }) as Sheet;
const NOW = Date.parse("2026-12-03T12:00:00Z");
const nameOf = (id: string) => ({ usr_arjun: "Arjun Rao", usr_maya: "Maya Chen" })[id] ?? "Someone";

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

describe("a locked room's line in the menu", () => {
  it("says the lock, and who can lift it when the reader cannot", () => {
    expect(lockedNote(sheet({ locked: true }), may({ unlock: true }))).toBe("Changes are locked.");
    expect(lockedNote(sheet({ locked: true }), may())).toBe("Changes are locked; the room's owner or an admin can unlock them.");
  });

  it("says nothing for a room not locked, nor in a thread", () => {
    expect(lockedNote(sheet(), may())).toBeNull();
    expect(lockedNote(sheet({ kind: "thread", locked: true }), may())).toBeNull();
  });
});

describe("a line's menu", () => {
  const theirs = { author_id: "usr_maya", kind: "text", deleted: false };
  const mine = { ...theirs, author_id: "usr_arjun" };

  it("pins and takes back somebody else's message as may says", () => {
    expect(lineActs(theirs, "usr_arjun", may({ pin: true, take_back: true }), false)).toMatchObject({ pin: true, deleteForEveryone: true, edit: false });
    expect(lineActs(theirs, "usr_arjun", may({ pin: false, take_back: false }), false)).toMatchObject({ pin: false, deleteForEveryone: false });
  });

  it("edits and takes back one's own words, and edits nothing in an archived room", () => {
    expect(lineActs(mine, "usr_arjun", may(), false)).toMatchObject({ edit: true, deleteForEveryone: true, reply: true });
    expect(lineActs(mine, "usr_arjun", may(), true)).toMatchObject({ edit: false, reply: false });
  });

  it("offers only Delete for me on a tombstone, and nothing before the sheet is read", () => {
    expect(lineActs({ ...theirs, deleted: true }, "usr_arjun", may(), false)).toEqual({ reply: false, pin: false, edit: false, hideForMe: true, deleteForEveryone: false });
    expect(lineActs(theirs, "usr_arjun", null, false).hideForMe).toBe(false);
  });
});

describe("where a card stands", () => {
  it("is answered once answered, whatever may says", () => {
    expect(cardState(approval({ answered_seq: 9 }), may({ cards: [{ kind: "approval", id: "perm_1", state: "open", deciders: [] }] }))).toEqual({ state: "answered" });
  });

  it("is what may says of it, with whose it is", () => {
    const said = may({ cards: [{ kind: "approval", id: "perm_1", state: "theirs", deciders: ["usr_arjun", "usr_maya"] }] });
    expect(cardState(approval(), said)).toEqual({ state: "theirs", deciders: ["usr_arjun", "usr_maya"] });
    expect(cardState(approval(), may({ cards: [{ kind: "approval", id: "perm_1", state: "expired", deciders: [] }] }))).toEqual({ state: "expired" });
  });

  it("waits, without buttons, for a card the sheet has not read yet", () => {
    expect(cardState(question(), may())).toEqual({ state: "waiting" });
    expect(cardState(question(), null)).toEqual({ state: "waiting" });
  });

  it("says how long until an approval expires, so the sheet is asked again then", () => {
    const soon = new Date(NOW + 30_000).toISOString();
    expect(msUntilExpiry(approval({ expires_at: soon }), NOW)).toBe(30_000);
    expect(msUntilExpiry(approval({ expires_at: soon }), NOW + 30_000)).toBeNull();
    expect(msUntilExpiry(approval({ expires_at: soon, answered_seq: 9 }), NOW)).toBeNull();
    expect(msUntilExpiry(question({ expires_at: soon }), NOW)).toBeNull();
  });
});

describe("what a card says instead of buttons", () => {
  it("names who decides, owner first", () => {
    expect(decidesWords(approval(), ["usr_arjun", "usr_maya"], "Scout", nameOf)).toBe("For Arjun Rao or Maya Chen to decide.");
    expect(decidesWords(approval(), [], "Scout", nameOf)).toBe("For Scout’s owner to decide.");
    expect(decidesWords(question(), [], "Scout", nameOf)).toBe("For the people in this room to answer.");
  });

  it("says why it takes no answer", () => {
    expect(closedWords(approval(), "expired")).toBe("Expired: Chips stopped waiting.");
    expect(closedWords(approval(), "ended")).toBe("The run ended before anyone decided.");
    expect(closedWords(question(), "ended")).toBe("The run ended before anyone answered.");
  });

  it("shows the risk the request gave, and none when it gave none", () => {
    expect(riskWord(approval({}, { risk: "high" }))).toBe("high");
    expect(riskWord(approval())).toBeNull();
    expect(riskWord(approval({}, { risk: "  " }))).toBeNull();
  });
});

describe("decidedWords (ADR 0130)", () => {
  const rule = { action: "jacobian.shell.execute", args: "ls *", effect: "allow" };
  it("says the owner's rule when the dial allowed it", () => {
    const answer = { decision: "approve", autonomy: "L2", rule };
    expect(decidedWords(answer, "system", "system", true)).toBe("Allowed by your rule: allow jacobian.shell.execute ls * (L2)");
    expect(decidedWords(answer, "system", "system", false)).toBe("Allowed by the owner’s rule: allow jacobian.shell.execute ls * (L2)");
  });
  it("says the level when no rule did", () => {
    expect(decidedWords({ decision: "approve", autonomy: "L3" }, "system", "system", true)).toBe("Allowed by Chips: the autonomy dial is at L3");
  });
  it("says who decided otherwise", () => {
    expect(decidedWords({ decision: "approve" }, "you", "usr_1", true)).toBe("Approved by you");
    expect(decidedWords({ decision: "edit", edited: "rm -rf tmp" }, "Arjun", "usr_1", true)).toBe("Approved as edited by Arjun: rm -rf tmp");
  });
});

describe("expiredWords (ADR 0131)", () => {
  it("is the sentence an expired question carries, and nothing for an answer", () => {
    const note = "Nobody answered in time, so the default was taken: Globex.";
    expect(expiredWords({ value: "g", note, expired: true })).toBe(note);
    expect(expiredWords({ value: "g" })).toBeNull();
  });
});
