import { describe, expect, it } from "vitest";
import { drawnFace, hasFace, initialOf, withEmoji } from "./faces";

const ORIGIN = "https://chips.example";

describe("an agent's face (ADR 0153)", () => {
  it("draws its emoji", () => {
    expect(drawnFace({ face: "🦊" }, "Fox", ORIGIN)).toEqual({ emoji: "🦊" });
  });

  it("draws its picture from this origin, with the initial to fall back on", () => {
    const url = "http://gateway:8080/v1/attachments/att_1?exp=1&tok=c&sig=s";
    expect(drawnFace({ face: "att_1", face_url: url }, "fox", ORIGIN)).toEqual({
      picture: `${ORIGIN}/v1/attachments/att_1?exp=1&tok=c&sig=s`,
      initial: "F",
    });
  });

  it("falls back to the initial with no face, or a picture with no link it may load", () => {
    expect(drawnFace(undefined, " scout", ORIGIN)).toEqual({ initial: "S" });
    expect(drawnFace({ face: null }, "Ledger", ORIGIN)).toEqual({ initial: "L" });
    expect(drawnFace({ face: "att_1" }, "Ledger", ORIGIN)).toEqual({ initial: "L" });
    expect(drawnFace({ face: "att_1", face_url: "https://evil.example/x.png" }, "Ledger", ORIGIN)).toEqual({ initial: "L" });
    expect(initialOf("")).toBe("?");
  });

  it("says an emoji face in a picker's words, never an attachment id", () => {
    expect(withEmoji({ face: "🦊" }, "Fox")).toBe("🦊 Fox");
    expect(withEmoji({ face: "att_1" }, "Fox")).toBe("Fox");
    expect(withEmoji(undefined, "Fox")).toBe("Fox");
    expect(hasFace({ face: "🦊" }) && !hasFace({}) && !hasFace(undefined)).toBe(true);
  });
});
