import { describe, expect, it } from "vitest";
import { isMainRoom, lineActs, mayAddWho, mayRemove, roomActs, type RoomFacts } from "./acts";
import type { Participant } from "./protocol";

const group: RoomFacts = { kind: "group", state: "open", locked: false, home_of: null, key: null };
const archived: RoomFacts = { ...group, state: "closed" };
const locked: RoomFacts = { ...group, locked: true };
const thread: RoomFacts = { ...group, kind: "thread" };
const home: RoomFacts = { kind: "direct", state: "open", locked: false, home_of: "hrn_s", key: null };
const direct: RoomFacts = { kind: "direct", state: "open", locked: false, home_of: null, key: null };
const keyed: RoomFacts = { ...direct, key: "scout:session-1" };

// What the menu offers, as the names of the acts that are on.
const offered = (room: RoomFacts, standing: string | null, role: string | null) => {
  const acts = roomActs(room, standing, role);
  const on = (["rename", "archive", "unarchive", "lock", "unlock", "pause", "add"] as const).filter((a) => acts[a]);
  return acts.delete ? [...on, `delete:${acts.delete}`] : on;
};

describe("the room's menu (space.updated, space.lock_set, space.erased)", () => {
  it("offers the room's owner everything", () => {
    expect(offered(group, "owner", "member")).toEqual(["rename", "archive", "lock", "pause", "add", "delete:erase"]);
  });

  it("offers a member rename and archive, but neither lock nor delete", () => {
    expect(offered(group, "member", "member")).toEqual(["rename", "archive", "pause", "add"]);
  });

  it("offers a workspace owner or admin lock and delete in a room they are a member of", () => {
    for (const role of ["owner", "admin"]) {
      expect(offered(group, "member", role)).toEqual(["rename", "archive", "lock", "pause", "add", "delete:erase"]);
    }
  });

  it("offers a guest neither rename, archive nor unarchive, nor adding anyone: a guest talks and leaves", () => {
    expect(offered(group, "guest", "member")).toEqual(["pause"]);
    expect(offered(archived, "guest", "member")).toEqual(["pause"]);
  });

  it("offers a workspace admin who is a guest here lock and delete (the door reads the role), but not rename or archive", () => {
    expect(offered(group, "guest", "admin")).toEqual(["lock", "pause", "delete:erase"]);
  });

  it("offers unarchive, not archive, once archived; an archived room may still be renamed, locked and deleted", () => {
    expect(offered(archived, "owner", "member")).toEqual(["rename", "unarchive", "lock", "pause", "add", "delete:erase"]);
    expect(offered(archived, "member", "member")).toEqual(["rename", "unarchive", "pause", "add"]);
  });

  it("offers nothing to somebody not in the room", () => {
    expect(offered(group, null, "owner")).toEqual([]);
  });
});

describe("a locked room", () => {
  it("offers its owner unlock and no rename, archive or delete", () => {
    expect(offered(locked, "owner", "member")).toEqual(["unlock", "pause", "add"]);
    expect(roomActs(locked, "owner", "member").lockedNote).toBe("Changes are locked.");
  });

  it("offers a workspace admin unlock too", () => {
    expect(offered(locked, "member", "admin")).toEqual(["unlock", "pause", "add"]);
  });

  it("offers a member no rename, archive or unlock, and says who can unlock it", () => {
    expect(offered(locked, "member", "member")).toEqual(["pause", "add"]);
    expect(roomActs(locked, "member", "member").lockedNote).toBe("Changes are locked; the room's owner or an admin can unlock them.");
  });

  it("offers no unarchive once archived either: no person's space.updated lands while it is locked", () => {
    expect(offered({ ...archived, locked: true }, "owner", "owner")).toEqual(["unlock", "pause", "add"]);
  });

  it("says nothing of a lock in a room that is not locked", () => {
    expect(roomActs(group, "owner", "owner").lockedNote).toBeNull();
  });
});

describe("a harness's home and a direct room", () => {
  it("never offers archive or delete in a harness's home; it may be renamed and locked", () => {
    expect(offered(home, "owner", "owner")).toEqual(["rename", "lock", "pause", "add"]);
  });

  it("offers an archived home unarchive (only archiving a home is refused)", () => {
    expect(offered({ ...home, state: "closed" }, "owner", "member")).toContain("unarchive");
  });

  it("offers delete on a direct room nobody could open again as archiving it, and not once it is archived", () => {
    expect(roomActs(direct, "owner", "member").delete).toBe("archive");
    expect(roomActs({ ...direct, state: "closed" }, "owner", "member").delete).toBeNull();
  });

  it("does not offer that delete to a workspace admin who is a guest there: the archive it becomes is refused to a guest", () => {
    expect(roomActs(direct, "guest", "admin").delete).toBeNull();
  });

  it("offers delete on a direct room a harness opened by key as erasing it", () => {
    expect(roomActs(keyed, "owner", "member").delete).toBe("erase");
    expect(roomActs({ ...keyed, state: "closed" }, "owner", "member").delete).toBe("erase");
  });
});

describe("a thread", () => {
  it("has no title, state, lock or members of its own, and goes with its room: it offers only pausing its agents", () => {
    for (const role of ["owner", "member"]) {
      for (const standing of ["owner", "member", "guest"]) {
        expect(offered(thread, standing, role)).toEqual(["pause"]);
        expect(offered({ ...thread, locked: true }, standing, role)).toEqual(["pause"]);
      }
    }
    expect(roomActs({ ...thread, locked: true }, "owner", "owner").lockedNote).toBeNull();
  });
});

function person(id: string): Participant {
  return { participant_id: id, kind: "person", name: id, role: "member", owner_id: null };
}
function harness(id: string): Participant {
  return { participant_id: id, kind: "harness", name: id, role: null, owner_id: "usr_a", capabilities: [] };
}
function agent(id: string, harnessId: string, extra: Partial<Participant> = {}): Participant {
  return { participant_id: id, kind: "agent", name: id, role: null, owner_id: harnessId, harness_id: harnessId, state: "active", ...extra };
}

describe("the sheet's Leave and Remove (membership.removed)", () => {
  const maya = { participant_id: "usr_m", standing: "member" };
  const me = { participant_id: "usr_a", standing: "member" };
  it("lets anybody leave, a guest too", () => {
    expect(mayRemove(group, "guest", "usr_a", { ...me, standing: "guest" }, person("usr_a"))).toBe(true);
    expect(mayRemove(group, "member", "usr_a", me, person("usr_a"))).toBe(true);
  });

  it("lets only the room's owner take somebody else out, not a member, nor a workspace admin as such", () => {
    expect(mayRemove(group, "owner", "usr_a", maya, person("usr_m"))).toBe(true);
    expect(mayRemove(group, "member", "usr_a", maya, person("usr_m"))).toBe(false);
  });

  it("keeps a Main agent in its Main room, and a harness here only behind its agents", () => {
    expect(mayRemove(home, "owner", "usr_a", { participant_id: "agt_main", standing: "member" }, agent("agt_main", "hrn_s", { main: true }))).toBe(false);
    expect(mayRemove(group, "owner", "usr_a", { participant_id: "hrn_s", standing: "agents" }, harness("hrn_s"))).toBe(false);
    expect(mayRemove(group, "owner", "usr_a", { participant_id: "agt_1", standing: "member" }, agent("agt_1", "hrn_s"))).toBe(true);
  });

  it("offers nothing in a thread, which has no members of its own", () => {
    expect(mayRemove(thread, "owner", "usr_a", me, person("usr_a"))).toBe(false);
    expect(mayRemove(thread, "owner", "usr_a", maya, person("usr_m"))).toBe(false);
  });
});

describe("who the sheet's Add lists (membership.added)", () => {
  const directory = [person("usr_a"), harness("hrn_s"), harness("hrn_l"), agent("agt_main", "hrn_s", { main: true }), agent("agt_1", "hrn_l")];

  it("finds a Main room: a home whose harness has a Main agent", () => {
    expect(isMainRoom(home, directory)).toBe(true);
    expect(isMainRoom({ ...home, home_of: "hrn_l" }, directory)).toBe(false);
    expect(isMainRoom(group, directory)).toBe(false);
  });

  it("lists people, harnesses and active agents in an open room", () => {
    expect(mayAddWho(group, person("usr_m"), false)).toBe(true);
    expect(mayAddWho(group, harness("hrn_l"), false)).toBe(true);
    expect(mayAddWho(group, agent("agt_1", "hrn_l"), false)).toBe(true);
  });

  it("lists no archived agent and no Main agent", () => {
    expect(mayAddWho(group, agent("agt_2", "hrn_l", { state: "archived" }), false)).toBe(false);
    expect(mayAddWho(group, agent("agt_main", "hrn_s", { main: true }), false)).toBe(false);
  });

  it("lists only people for a Main room", () => {
    expect(mayAddWho(home, person("usr_m"), true)).toBe(true);
    expect(mayAddWho(home, harness("hrn_l"), true)).toBe(false);
    expect(mayAddWho(home, agent("agt_1", "hrn_l"), true)).toBe(false);
  });

  it("lists no agent for an archived room, which takes none", () => {
    expect(mayAddWho(archived, agent("agt_1", "hrn_l"), false)).toBe(false);
    expect(mayAddWho(archived, person("usr_m"), false)).toBe(true);
  });
});

describe("a line's menu (rules/words.py)", () => {
  const words = { author_id: "usr_m", kind: "text", deleted: false };
  const gone = { ...words, deleted: true };

  it("offers a tombstone only Delete for me", () => {
    expect(lineActs(gone, "usr_a", "owner", "owner", false)).toEqual({ reply: false, react: false, pin: false, edit: false, hideForMe: true, deleteForEveryone: false });
  });

  it("lets the author edit and take back their own words, and nobody else edit them", () => {
    expect(lineActs(words, "usr_m", "member", "member", false)).toMatchObject({ edit: true, deleteForEveryone: true });
    expect(lineActs(words, "usr_x", "member", "member", false)).toMatchObject({ edit: false, deleteForEveryone: false, hideForMe: true });
    expect(lineActs({ ...words, kind: "approval" }, "usr_m", "member", "member", false).edit).toBe(false);
  });

  it("lets the room's owner or a workspace owner or admin take anybody's words back", () => {
    expect(lineActs(words, "usr_a", "owner", "member", false).deleteForEveryone).toBe(true);
    expect(lineActs(words, "usr_a", "member", "admin", false).deleteForEveryone).toBe(true);
    expect(lineActs(words, "usr_a", "guest", "owner", false).deleteForEveryone).toBe(true);
  });

  it("offers a guest no Pin, and everybody else Pin", () => {
    expect(lineActs(words, "usr_g", "guest", "guest", false)).toMatchObject({ pin: false, react: true, reply: true });
    expect(lineActs(words, "usr_x", "member", "member", false).pin).toBe(true);
  });

  it("offers no Reply or Edit in an archived room, where there is no composer", () => {
    expect(lineActs(words, "usr_m", "member", "member", true)).toMatchObject({ reply: false, edit: false, pin: true, deleteForEveryone: true });
  });

  it("offers nothing before the person's standing is known", () => {
    expect(lineActs(words, "usr_m", null, "member", false)).toMatchObject({ reply: false, hideForMe: false });
  });
});
