import { describe, expect, it } from "vitest";
import { capsEvent, capsForm, mayChangeSettings, parseSize, refereeEvent, refereeForm, refereeWords } from "./settings";

const caps = { ceiling_bytes: 100e6, photos_bytes: 25e6, videos_bytes: 100e6, files_bytes: 100e6 };

describe("the referee's form", () => {
  it("shows what is set, never as a ticked box", () => {
    expect(refereeForm({ stop: 16, hold: "never", circles: true })).toEqual({ stop: "16", stopNever: false, hold: "", holdNever: true, circles: true });
  });

  it("sends counts, never, and circles as typed", () => {
    const sent = refereeEvent({ stop: " 4 ", stopNever: false, hold: "9", holdNever: false, circles: false });
    expect(sent).toEqual({ ok: true, value: { type: "workspace.referee_set", stop: 4, hold: 9, circles: false } });
    const never = refereeEvent({ stop: "x", stopNever: true, hold: "", holdNever: true, circles: true });
    expect(never).toEqual({ ok: true, value: { type: "workspace.referee_set", stop: "never", hold: "never", circles: true } });
  });

  it("says why a count can't be sent, naming its field", () => {
    for (const stop of ["1", "1001", "3.5", "", "ten"]) {
      const r = refereeEvent({ stop, stopNever: false, hold: "48", holdNever: false, circles: true });
      expect(r).toEqual({ ok: false, field: "stop", error: "The stop is a whole number of messages from 2 to 1000, or never." });
    }
    const r = refereeEvent({ stop: "16", stopNever: false, hold: "0", holdNever: false, circles: true });
    expect(r.ok ? null : r.field).toBe("hold");
  });

  it("says in one sentence what it does", () => {
    expect(refereeWords({ stop: 16, hold: 48, circles: true })).toBe("Agents are told to stop after 16 messages to each other, held after 48; going in a circle stops them too.");
    expect(refereeWords({ stop: "never", hold: "never", circles: false })).toBe("Agents are never told to stop, never held.");
  });
});

describe("the caps' form", () => {
  it("reads sizes as people write them (megabytes when no unit)", () => {
    expect(parseSize("25 MB")).toBe(25e6);
    expect(parseSize("800kb")).toBe(800e3);
    expect(parseSize("1,5 GB")).toBe(1.5e9);
    expect(parseSize("12")).toBe(12e6);
    expect(parseSize("10 KB")).toBe(10e3);
    for (const bad of ["", "MB", "12 parsecs", "-3 MB", "0"]) expect(parseSize(bad)).toBeNull();
  });

  it("shows a kind capped at the ceiling as blank", () => {
    expect(capsForm(caps)).toEqual({ photos_bytes: "25 MB", videos_bytes: "", files_bytes: "" });
  });

  it("sends a cap per kind, null for blank", () => {
    expect(capsEvent({ photos_bytes: "2 MB", videos_bytes: "", files_bytes: "10 KB" }, caps.ceiling_bytes)).toEqual({
      ok: true,
      value: { type: "attachment.caps_set", photos_bytes: 2e6, videos_bytes: null, files_bytes: 10e3 },
    });
  });

  it("refuses what it can't read, and what the ceiling would undo", () => {
    expect(capsEvent({ photos_bytes: "lots", videos_bytes: "", files_bytes: "" }, caps.ceiling_bytes)).toEqual({
      ok: false,
      field: "photos_bytes",
      error: "Photos: “lots” is not a size. Write it as 25 MB, 800 KB or 1.5 GB, or leave it blank for no cap of its own.",
    });
    expect(capsEvent({ photos_bytes: "", videos_bytes: "2 GB", files_bytes: "" }, caps.ceiling_bytes)).toEqual({
      ok: false,
      field: "videos_bytes",
      error: "Videos: nothing over 100 MB is taken on this server, whatever the cap. Make it 100 MB or less, or leave it blank.",
    });
  });
});

describe("who changes them", () => {
  it("is an owner or an admin", () => {
    expect(["owner", "admin", "member", "guest", null].map(mayChangeSettings)).toEqual([true, true, false, false, false]);
  });
});
