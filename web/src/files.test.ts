import { describe, expect, it } from "vitest";
import { clockOf, expired, foldHeard, heardWords, kindOf, overCap, sameOrigin, sizeWords, wavOf } from "./files";

const caps = { ceiling_bytes: 100e6, photos_bytes: 20e6, videos_bytes: 50e6, files_bytes: 100e6 };

describe("files", () => {
  it("says sizes as the server does", () => {
    expect(sizeWords(62_300_000)).toBe("62.3 MB");
    expect(sizeWords(50_000_000)).toBe("50 MB");
    expect(sizeWords(800_000)).toBe("800 KB");
    expect(sizeWords(12)).toBe("12 bytes");
  });

  it("refuses a file over its kind's cap with the server's sentence", () => {
    expect(overCap(caps, "video", 62_300_000)).toBe("Videos here are capped at 50 MB, and this one is 62.3 MB.");
    expect(overCap(caps, "photo", 1_000)).toBeNull();
    expect(overCap({ ...caps, ceiling_bytes: 10e6 }, "file", 11e6)).toBe("Files here are capped at 10 MB, and this one is 11 MB.");
    expect(overCap(null, "file", 1e12)).toBeNull();
  });

  it("knows a photo from a picture it would not decode", () => {
    expect(kindOf("image/png")).toBe("photo");
    expect(kindOf("image/svg+xml")).toBe("file");
    expect(kindOf("video/mp4")).toBe("video");
    expect(kindOf("")).toBe("file");
  });

  it("fetches a signed link from the page's own origin, and nothing else", () => {
    const origin = "http://127.0.0.1:9000";
    expect(sameOrigin("http://gw-b:8080/v1/attachments/att_1?exp=1&tok=t&sig=s", origin)).toBe(`${origin}/v1/attachments/att_1?exp=1&tok=t&sig=s`);
    expect(sameOrigin("http://evil.example/steal", origin)).toBeUndefined();
    expect(sameOrigin(undefined, origin)).toBeUndefined();
  });

  it("treats a link about to run out as gone", () => {
    const now = Date.parse("2026-12-01T10:00:00Z");
    const file = { attachment_id: "att_1", byte_size: 1, kind: "file" as const, mime_type: "text/plain", name: "a", sha256: "x", version: 1, url: "u" };
    expect(expired({ ...file, url_expires_at: "2026-12-01T10:09:00Z" }, now)).toBe(false);
    expect(expired({ ...file, url_expires_at: "2026-12-01T10:00:02Z" }, now)).toBe(true);
    expect(expired({ ...file }, now)).toBe(true);
  });
});

describe("voice notes", () => {
  const note = { attachment_id: "att_1", name: "voice-note.wav", mime_type: "audio/wav", kind: "voice_note" as const, byte_size: 10, sha256: "x", version: 1, duration_ms: 4_400 };

  it("says a note's length as a player does", () => {
    expect(clockOf(4_400)).toBe("0:04");
    expect(clockOf(80_000)).toBe("1:20");
    expect(clockOf(null)).toBe("");
  });

  it("shows the words heard, why there are none, or that it is being heard", () => {
    expect(heardWords(note)).toEqual({ words: "", note: "Transcribing…", waiting: true });
    const [heard] = foldHeard([note], { attachment_id: "att_1", outcome: "words", transcript: "the quick brown fox", note: "Heard by a machine." })!;
    expect(heardWords(heard!)).toEqual({ words: "the quick brown fox", note: "Heard by a machine.", waiting: false });
    const [silent] = foldHeard([note], { attachment_id: "att_1", outcome: "nothing", note: "No words were heard in it." })!;
    expect(heardWords(silent!)).toEqual({ words: "", note: "No words were heard in it.", waiting: false });
    expect(foldHeard([note], { attachment_id: "att_2", outcome: "nothing" })).toBeNull();
  });

  it("writes a recording as a 16-bit mono WAV", () => {
    const wav = wavOf(new Float32Array([0, 1, -1]), 16_000);
    const v = new DataView(wav.buffer);
    expect(new TextDecoder().decode(wav.slice(0, 4))).toBe("RIFF");
    expect(v.getUint32(24, true)).toBe(16_000);
    expect(v.getUint32(40, true)).toBe(6);
    expect([v.getInt16(44, true), v.getInt16(46, true), v.getInt16(48, true)]).toEqual([0, 32767, -32767]);
  });

  it("counts a voice note as a file against the caps", () => {
    expect(overCap(caps, "voice_note", 101e6)).toBe("Files here are capped at 100 MB, and this one is 101 MB.");
  });
});
