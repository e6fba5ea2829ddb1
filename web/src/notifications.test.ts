import { describe, expect, it } from "vitest";
import {
  allRead,
  appendPage,
  appUrl,
  badge,
  decidable,
  doneWords,
  hrefOf,
  inQuietHours,
  keyBytes,
  merge,
  prefsProblem,
  shownOf,
  tabTitle,
  upsert,
  DEFAULT_PREFS,
  foldFrame,
  type Ntf,
} from "./notifications";

function ntf(id: string, seq: number, extra: Partial<Ntf> = {}): Ntf {
  return {
    id,
    kind: "approval",
    space_id: "spc_1",
    space_name: "Builds",
    seq,
    ref_id: `apr_${seq}`,
    title: "Scout asks to run rm -rf build/",
    body: "rm -rf build/",
    created_at: `2026-12-04T05:00:${String(seq % 60).padStart(2, "0")}Z`,
    read_at: null,
    done_at: null,
    done_reason: null,
    ...extra,
  };
}

describe("the inbox's list", () => {
  it("keeps the newest first, whatever order they come in", () => {
    let list: Ntf[] = [];
    for (const seq of [5, 9, 7]) list = upsert(list, ntf(`n${seq}`, seq), "all");
    expect(list.map((n) => n.id)).toEqual(["n9", "n7", "n5"]);
  });

  it("replaces a notification by its id, never listing it twice", () => {
    let list = [ntf("b", 2), ntf("a", 1)];
    list = upsert(list, ntf("a", 1, { read_at: "t" }), "all");
    expect(list.map((n) => n.id)).toEqual(["b", "a"]);
    expect(list.find((n) => n.id === "a")?.read_at).toBe("t");
  });

  it("never takes back read or done (an older frame after a newer one)", () => {
    const done = ntf("a", 1, { read_at: "r", done_at: "d", done_reason: "approved" });
    const stale = ntf("a", 1);
    expect(merge(done, stale)).toMatchObject({ read_at: "r", done_at: "d", done_reason: "approved" });
    // and a newer word does land
    expect(merge(stale, done)).toMatchObject({ read_at: "r", done_at: "d", done_reason: "approved" });
  });

  it("keeps a done one in 'needs me' where it was, and does not add a done one there", () => {
    let list = [ntf("a", 1)];
    list = upsert(list, ntf("a", 1, { done_at: "d" }), "needs_me");
    expect(list).toHaveLength(1);
    expect(list[0]!.done_at).toBe("d");
    expect(upsert(list, ntf("b", 2, { done_at: "d" }), "needs_me")).toHaveLength(1);
    expect(upsert(list, ntf("b", 2, { done_at: "d" }), "all")).toHaveLength(2);
  });

  it("pages on with no duplicates where a page overlaps", () => {
    const first = [ntf("c", 3), ntf("b", 2)];
    const out = appendPage(first, [ntf("b", 2), ntf("a", 1)]);
    expect(out.map((n) => n.id)).toEqual(["c", "b", "a"]);
  });

  it("marks all read without changing what was read before", () => {
    const out = allRead([ntf("a", 1, { read_at: "early" }), ntf("b", 2)], "now");
    expect(out.map((n) => n.read_at)).toEqual(["early", "now"]);
  });
});

describe("counts and titles", () => {
  it("puts the unread count before the tab's title", () => {
    expect(tabTitle(3)).toBe("(3) Chips");
    expect(tabTitle(0)).toBe("Chips");
    expect(tabTitle(120)).toBe("(99+) Chips");
  });
  it("draws no badge at nought", () => {
    expect(badge(0)).toBe("");
    expect(badge(4)).toBe("4");
    expect(badge(100)).toBe("99+");
  });
});

describe("where a notification opens", () => {
  it("opens the room at the line it is about", () => {
    expect(hrefOf({ space_id: "spc_1", ref_id: "apr_9", kind: "approval" })).toBe("#/room/spc_1/at/apr_9");
    expect(hrefOf({ space_id: "spc/1", ref_id: "m 1", kind: "mention" })).toBe("#/room/spc%2F1/at/m%201");
  });
  it("opens the room alone for a budget or when it names no line", () => {
    expect(hrefOf({ space_id: "spc_1", ref_id: "job_1", kind: "budget" })).toBe("#/room/spc_1");
    expect(hrefOf({ space_id: "spc_1", ref_id: null, kind: "direct" })).toBe("#/room/spc_1");
  });
  it("keeps a link on the app's own origin", () => {
    expect(appUrl("#/room/x")).toBe("/#/room/x");
    expect(appUrl("https://chips.example/#/room/x/at/y")).toBe("/#/room/x/at/y");
    expect(appUrl("/#/room/x")).toBe("/#/room/x");
  });
});

describe("what is done, and what can be decided in place", () => {
  it("says why it is done", () => {
    expect(doneWords(ntf("a", 1))).toBeNull();
    expect(doneWords(ntf("a", 1, { done_at: "d", done_reason: "approved" }))).toBe("Approved");
    expect(doneWords(ntf("a", 1, { done_at: "d", done_reason: null }))).toBe("Done");
    expect(doneWords(ntf("a", 1, { done_at: "d", done_reason: "answered" }))).toBe("Decided");
    expect(doneWords(ntf("a", 1, { kind: "question", done_at: "d", done_reason: "answered" }))).toBe("Answered");
    expect(doneWords(ntf("a", 1, { done_at: "d", done_reason: "something_new" }))).toBe("Something new");
  });
  it("lets an open approval be decided, nothing else", () => {
    expect(decidable(ntf("a", 1))).toBe(true);
    expect(decidable(ntf("a", 1, { done_at: "d" }))).toBe(false);
    expect(decidable(ntf("a", 1, { kind: "question" }))).toBe(false);
    expect(decidable(ntf("a", 1, { ref_id: null }))).toBe(false);
  });
});

describe("what a push shows", () => {
  it("names the room, what is asked, and opens the line", () => {
    const shown = shownOf({ notification: ntf("ntf_1", 4) });
    expect(shown).toEqual({
      title: "Scout asks to run rm -rf build/",
      body: "Builds · rm -rf build/",
      tag: "chips-ntf_1",
      url: "/#/room/spc_1/at/apr_4",
      done: false,
    });
  });
  it("names the room once, where the title does not", () => {
    const shown = shownOf(ntf("ntf_1", 4, { title: "Scout asks for your approval in Builds" }));
    expect(shown.body).toBe("rm -rf build/");
  });
  it("takes the notification bare, or in a socket frame", () => {
    expect(shownOf(ntf("ntf_1", 4)).tag).toBe("chips-ntf_1");
    expect(shownOf({ type: "notification", notification: ntf("ntf_2", 4), unread: 1 }).tag).toBe("chips-ntf_2");
  });
  it("says a done one is done", () => {
    expect(shownOf(ntf("ntf_1", 4, { done_at: "d" })).done).toBe(true);
  });
  it("shows something for a push it does not understand, opening the inbox", () => {
    expect(shownOf("garbage")).toMatchObject({ title: "Chips", url: "/#/inbox", tag: "chips" });
    expect(shownOf(null)).toMatchObject({ title: "Chips", url: "/#/inbox" });
  });
  it("opens the line as the inbox does, else where the server's link says", () => {
    expect(shownOf({ ...ntf("n", 1), url: "https://chips.example/#/room/spc_1/at/1" }).url).toBe("/#/room/spc_1/at/apr_1");
    expect(shownOf({ title: "Chips", url: "https://chips.example/#/room/spc_1/at/7" }).url).toBe("/#/room/spc_1/at/7");
  });
});

describe("the VAPID key", () => {
  it("decodes base64url without padding", () => {
    expect([...keyBytes("AQID_-8")]).toEqual([1, 2, 3, 255, 239]);
    expect(keyBytes("BBBB").length).toBe(3);
  });
});

describe("preferences", () => {
  it("takes the defaults", () => {
    expect(prefsProblem(DEFAULT_PREFS)).toBeNull();
  });
  it("refuses a delay out of range, only when the delay is used", () => {
    expect(prefsProblem({ ...DEFAULT_PREFS, email_delay_seconds: 10 })).toMatch(/between/);
    expect(prefsProblem({ ...DEFAULT_PREFS, email: "off", email_delay_seconds: 10 })).toBeNull();
    expect(prefsProblem({ ...DEFAULT_PREFS, email_delay_seconds: 7 * 86400 + 60 })).toMatch(/7 days/);
  });
  it("refuses an address that is none, and an empty time zone", () => {
    expect(prefsProblem({ ...DEFAULT_PREFS, email_address: "ada" })).toMatch(/address/);
    expect(prefsProblem({ ...DEFAULT_PREFS, email_address: "ada@example.com", time_zone: "Europe/Paris" })).toBeNull();
    expect(prefsProblem({ ...DEFAULT_PREFS, email_address: null })).toBeNull();
    expect(prefsProblem({ ...DEFAULT_PREFS, time_zone: " " })).toMatch(/time zone/);
  });
  it("refuses quiet hours that are not times, or are empty", () => {
    expect(prefsProblem({ ...DEFAULT_PREFS, quiet_hours: { start: "25:00", end: "07:00" } })).toMatch(/times/);
    expect(prefsProblem({ ...DEFAULT_PREFS, quiet_hours: { start: "07:00", end: "07:00" } })).toMatch(/different/);
    expect(prefsProblem({ ...DEFAULT_PREFS, quiet_hours: { start: "22:00", end: "07:00" } })).toBeNull();
  });
  it("knows quiet hours across midnight", () => {
    const q = { start: "22:00", end: "07:00" };
    expect(inQuietHours(q, "23:30")).toBe(true);
    expect(inQuietHours(q, "06:59")).toBe(true);
    expect(inQuietHours(q, "07:00")).toBe(false);
    expect(inQuietHours(q, "12:00")).toBe(false);
    expect(inQuietHours({ start: "12:00", end: "13:00" }, "12:30")).toBe(true);
    expect(inQuietHours(null, "12:30")).toBe(false);
  });
});

describe("a socket frame", () => {
  const frame = (n: Ntf, unread = 1) => ({ type: "notification", notification: n, unread });

  it("adds a new one to the lists held and says it is fresh", () => {
    const f = foldFrame({ all: [], needs_me: [] }, frame(ntf("a", 1)));
    expect(f.lists.all!.map((n) => n.id)).toEqual(["a"]);
    expect(f.lists.needs_me!.map((n) => n.id)).toEqual(["a"]);
    expect(f.fresh?.id).toBe("a");
    expect(f.unread).toBe(1);
    expect(f.needsMe).toBeNull();
  });

  it("leaves a list not read yet unread", () => {
    const f = foldFrame({ all: null, needs_me: [] }, frame(ntf("a", 1)));
    expect(f.lists.all).toBeNull();
  });

  it("marks one done everywhere from another device, and is not fresh again", () => {
    const held = { all: [ntf("a", 1)], needs_me: [ntf("a", 1)] };
    const f = foldFrame(held, frame(ntf("a", 1, { read_at: "r", done_at: "d", done_reason: "approved" }), 0));
    expect(f.lists.all![0]!.done_at).toBe("d");
    expect(f.lists.needs_me![0]!.done_reason).toBe("approved");
    expect(f.fresh).toBeNull();
    expect(f.done?.id).toBe("a");
    expect(f.unread).toBe(0);
  });

  it("does not tell the browser of one already read elsewhere", () => {
    expect(foldFrame({ all: [], needs_me: [] }, frame(ntf("a", 1, { read_at: "r" }))).fresh).toBeNull();
  });

  it("takes a frame with counts alone, or nonsense, without change", () => {
    const held = { all: [ntf("a", 1)], needs_me: null };
    const f = foldFrame(held, { type: "notification", unread: 4, needs_me: 2 });
    expect(f.lists).toBe(held);
    expect([f.unread, f.needsMe]).toEqual([4, 2]);
    expect(foldFrame(held, { type: "notification", notification: "x" }).lists).toBe(held);
  });
});
