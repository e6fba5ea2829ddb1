import { describe, expect, it } from "vitest";
import { askableFaces, askedRoom, lastAsked, tapFace } from "./asking";
import type { Participant } from "./protocol";

const face = (id: string, name: string, capabilities: string[] = ["new_spaces"], extra: Partial<Participant> = {}): Participant => ({
  participant_id: id,
  kind: "harness",
  name,
  role: null,
  owner_id: "usr_a",
  capabilities,
  ...extra,
});

describe("the faces a room is asked of", () => {
  it("are the active harnesses that take new spaces, by name", () => {
    const people: Participant[] = [
      face("hrn_s", "Scout"),
      face("hrn_a", "Atlas", ["new_spaces", "agents"]),
      face("hrn_l", "Ledger", []),
      face("hrn_o", "Old", ["new_spaces"], { active: false }),
      { participant_id: "usr_m", kind: "person", name: "Maya", role: "member", owner_id: null },
    ];
    expect(askableFaces(people).map((p) => p.participant_id)).toEqual(["hrn_a", "hrn_s"]);
  });

  it("open on whoever this person asked last, the first asked first", () => {
    const row = (created_by: string, at: string, asked_of: string | null, members: string[]) => ({
      created_by,
      created_at: at,
      asked_of,
      members: members.map((participant_id) => ({ participant_id, standing: "member" })),
    });
    const rows = [
      row("usr_a", "2026-12-01T10:00:00Z", "hrn_s", ["usr_a", "hrn_s"]),
      row("usr_a", "2026-12-02T10:00:00Z", "hrn_a", ["usr_a", "hrn_s", "hrn_a", "usr_m"]),
      row("usr_m", "2026-12-03T10:00:00Z", "hrn_s", ["usr_m", "hrn_s"]),
      row("usr_a", "2026-12-04T10:00:00Z", null, ["usr_a"]),
    ];
    expect(lastAsked(rows, "usr_a", ["hrn_a", "hrn_s"])).toEqual(["hrn_a", "hrn_s"]);
    expect(lastAsked(rows, "usr_m", ["hrn_a", "hrn_s"])).toEqual(["hrn_s"]);
    // A face no longer offered is not opened on.
    expect(lastAsked(rows, "usr_a", ["hrn_s"])).toEqual(["hrn_s"]);
    expect(lastAsked(rows, "usr_z", ["hrn_s"])).toEqual([]);
    // A face put in stands there as the agent Chips gave it (docs/adr/0154).
    const given = [row("usr_a", "2026-12-05T10:00:00Z", "hrn_a", ["usr_a", "agt_s2", "hrn_a"])];
    const harnessOf = (id: string) => (id === "agt_s2" ? "hrn_s" : null);
    expect(lastAsked(given, "usr_a", ["hrn_a", "hrn_s"], harnessOf)).toEqual(["hrn_a", "hrn_s"]);
  });

  it("are tapped: the first chooses, each after adds or removes one", () => {
    expect(tapFace([], "hrn_s")).toEqual(["hrn_s"]);
    expect(tapFace(["hrn_s"], "hrn_a")).toEqual(["hrn_s", "hrn_a"]);
    expect(tapFace(["hrn_s", "hrn_a"], "hrn_s")).toEqual(["hrn_a"]);
  });

  it("ask the room of the first face picked and put every face in it", () => {
    expect(askedRoom(" Invoices ", ["hrn_a", "hrn_s"])).toEqual({ type: "space.created", kind: "group", title: "Invoices", members: ["hrn_a", "hrn_s"], asked_of: "hrn_a" });
    expect(askedRoom("Plain", [])).toEqual({ type: "space.created", kind: "group", title: "Plain", members: [] });
    expect(askedRoom("", ["hrn_s"])).toEqual({ type: "space.created", kind: "group", members: ["hrn_s"], asked_of: "hrn_s" });
  });
});
