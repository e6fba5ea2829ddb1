import { describe, expect, it } from "vitest";
import { asSentence, heirsFor, takesThePhone } from "./people";
import type { Participant } from "./protocol";

const person = (id: string, name: string, role: string, active = true, kind = "person"): Participant => ({
  participant_id: id,
  kind,
  name,
  role,
  owner_id: null,
  active,
});

describe("who may take over a deactivated person's rooms", () => {
  it("lists the other active people who are not guests, by name", () => {
    const people = [
      person("usr_d", "Dana", "member"),
      person("usr_z", "Zoe", "admin"),
      person("usr_a", "Arjun", "owner"),
      person("usr_g", "Gus", "guest"),
      person("usr_o", "Otto", "member", false),
      person("hrn_s", "Scout", "member", true, "harness"),
    ];
    expect(heirsFor(people, "usr_d").map((p) => p.name)).toEqual(["Arjun", "Zoe"]);
  });
});

describe("what takes the whole screen on a phone", () => {
  it("a room, a workspace page, and the People, Devices, Profile, Inbox and Notifications pages", () => {
    for (const route of ["#/people", "#/devices", "#/profile", "#/inbox", "#/notifications"]) {
      expect(takesThePhone(route, null, false)).toBe(true);
    }
    expect(takesThePhone("#/room/spc_1", "spc_1", false)).toBe(true);
    expect(takesThePhone("#/settings", null, true)).toBe(true);
  });
  it("not the list of rooms itself", () => {
    for (const route of ["", "#/", "#/archived"]) expect(takesThePhone(route, null, false)).toBe(false);
  });
});

describe("a refusal on the sign-in screen", () => {
  it("is a sentence", () => {
    expect(asSentence("this workspace takes sign-ins from acme.test only, not elsewhere.test")).toBe(
      "This workspace takes sign-ins from acme.test only, not elsewhere.test.",
    );
    expect(asSentence("Already one.")).toBe("Already one.");
  });
});
