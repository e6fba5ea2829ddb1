import { describe, expect, it } from "vitest";
import { followersOf, followerSides, followWords } from "./follows";
import type { Participant } from "./protocol";

function person(id: string, name: string): Participant {
  return { participant_id: id, kind: "person", name, role: "member", owner_id: null };
}
function harness(id: string, name: string, owner: string, capabilities: string[]): Participant {
  return { participant_id: id, kind: "harness", name, role: null, owner_id: owner, capabilities };
}
function agent(id: string, name: string, harnessId: string): Participant {
  return { participant_id: id, kind: "agent", name, role: null, owner_id: harnessId, harness_id: harnessId, capabilities: [] };
}

const directory = new Map(
  [
    person("usr_a", "Arjun Rao"),
    person("usr_m", "Maya Chen"),
    harness("hrn_s", "Scout", "usr_a", ["follows_rooms", "agents"]),
    harness("hrn_l", "Ledger", "usr_a", ["new_spaces"]),
    harness("hrn_j", "Jacobian", "usr_a", ["new_spaces", "follows_rooms", "agents"]),
    harness("hrn_n", "Nova", "usr_m", ["follows_rooms"]),
    agent("agt_j1", "J1", "hrn_j"),
    agent("agt_j2", "J2", "hrn_j"),
    agent("agt_l1", "L1", "hrn_l"),
  ].map((p) => [p.participant_id, p]),
);
const members = (...ids: string[]) => ids.map((participant_id) => ({ participant_id }));
const nameOf = (id: string) => directory.get(id)?.name ?? null;
const words = (action: "delete" | "archive", ids: string[], me: string) => followWords(followerSides(action, followersOf(members(...ids), directory), me), nameOf);

describe("who follows the room", () => {
  it("is each harness that declared follows_rooms, and nobody else", () => {
    expect(followersOf(members("usr_a", "hrn_s", "hrn_l", "usr_m"), directory).map((f) => f.name)).toEqual(["Scout"]);
    expect(followersOf(members("usr_a", "hrn_l"), directory)).toEqual([]);
  });

  it("is an agent's harness, named once for several of its agents; an agent of a harness that did not declare it is nobody", () => {
    const found = followersOf(members("usr_a", "agt_j1", "agt_l1", "agt_j2"), directory);
    expect(found).toEqual([{ id: "hrn_j", name: "Jacobian", ownerId: "usr_a" }]);
  });

  it("promises nothing for someone the directory does not know", () => {
    expect(followersOf(members("agt_gone", "hrn_gone"), directory)).toEqual([]);
  });
});

describe("what the sheet that asks first says", () => {
  it("deleted by the harness's owner: it deletes its side too", () => {
    expect(words("delete", ["usr_a", "hrn_s", "hrn_l"], "usr_a")).toEqual(["Scout deletes its side too."]);
  });

  it("deleted by somebody else: it archives its side, for its owner", () => {
    expect(words("delete", ["usr_m", "agt_j1", "hrn_l"], "usr_m")).toEqual(["Jacobian archives its side, for Arjun Rao to delete or bring back."]);
  });

  it("says each, harnesses that do the same together", () => {
    expect(words("delete", ["usr_a", "hrn_s", "agt_j1", "hrn_n"], "usr_a")).toEqual([
      "Scout and Jacobian delete their sides too.",
      "Nova archives its side, for Maya Chen to delete or bring back.",
    ]);
    expect(words("delete", ["usr_m", "hrn_s", "agt_j2"], "usr_m")).toEqual(["Scout and Jacobian archive their sides, for Arjun Rao to delete or bring back."]);
  });

  it("archived: it archives its side and brings it back on unarchive, whoever archives", () => {
    expect(words("archive", ["usr_m", "hrn_s", "hrn_l"], "usr_m")).toEqual(["Scout archives its side too, and brings it back if the room is unarchived."]);
    expect(words("archive", ["usr_a", "hrn_s", "agt_j1"], "usr_a")).toEqual([
      "Scout and Jacobian archive their sides too, and bring them back if the room is unarchived.",
    ]);
  });

  it("says nothing when no harness here follows the room", () => {
    expect(words("delete", ["usr_a", "hrn_l", "agt_l1"], "usr_a")).toEqual([]);
    expect(words("archive", ["usr_a", "hrn_l"], "usr_a")).toEqual([]);
  });

  it("says its owner when the directory does not name them, and never deletes for nobody signed in", () => {
    const stray = [{ id: "hrn_x", name: "Stray", ownerId: "usr_gone" }];
    expect(followWords(followerSides("delete", stray, null), nameOf)).toEqual(["Stray archives its side, for its owner to delete or bring back."]);
  });
});
