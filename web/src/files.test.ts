import { describe, expect, it } from "vitest";
import { expired, kindOf, overCap, sameOrigin, sizeWords } from "./files";

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
