import { describe, expect, it } from "vitest";
import { b64url } from "./device";
import { creationOptions, fromB64url, passkeyWords, requestOptions } from "./passkey";

describe("a passkey's options, from the server's JSON", () => {
  it("turns base64url back into the bytes it was", () => {
    const bytes = new Uint8Array([0, 1, 250, 251, 252, 253, 254, 255, 62, 63]);
    expect(new Uint8Array(fromB64url(b64url(bytes)))).toEqual(bytes);
  });
  it("gives the authenticator the challenge, the user's id and the passkeys to leave out as bytes", () => {
    const o = creationOptions({
      rp: { id: "localhost", name: "Chips" },
      user: { id: "dXNyXzE", name: "Dana", displayName: "Dana" },
      challenge: "AAEC",
      pubKeyCredParams: [{ type: "public-key", alg: -7 }],
      excludeCredentials: [{ id: "AQID", type: "public-key" }],
    });
    expect(new TextDecoder().decode(o.user.id as ArrayBuffer)).toBe("usr_1");
    expect([...new Uint8Array(o.challenge as ArrayBuffer)]).toEqual([0, 1, 2]);
    expect([...new Uint8Array(o.excludeCredentials![0]!.id as ArrayBuffer)]).toEqual([1, 2, 3]);
    const r = requestOptions({ challenge: "AAEC", rpId: "localhost" });
    expect(r.rpId).toBe("localhost");
    expect(r.allowCredentials).toEqual([]);
  });
  it("says a cancelled passkey in words", () => {
    const err = new Error("x");
    err.name = "NotAllowedError";
    expect(passkeyWords(err)).toMatch(/was not used/);
  });
});
