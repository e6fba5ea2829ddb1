import { describe, expect, it } from "vitest";
import { b64url, deviceName, inviteIn, sessionBytes, signedInFrom, signInRefusedFrom } from "./device";

describe("device", () => {
  it("reads the invite's secret from the link's hash", () => {
    expect(inviteIn("#/invite/chips_iv_abc")).toBe("chips_iv_abc");
    expect(inviteIn("#/invite/ABCD-EFGH")).toBe("ABCD-EFGH");
    expect(inviteIn("#/invite/")).toBeNull();
    expect(inviteIn("#/room/spc_1")).toBeNull();
  });

  it("signs the bytes the server checks", () => {
    expect(new TextDecoder().decode(sessionBytes("crd_1", 100, "n"))).toBe("chips-session-v1\ncrd_1\n100\nn");
  });

  it("writes base64url without padding", () => {
    expect(b64url(new Uint8Array([251, 255, 191]))).toBe("-_-_");
    expect(b64url(new Uint8Array([1]))).toBe("AQ");
  });

  it("names a browser by its user agent", () => {
    expect(deviceName("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36")).toBe("Chrome on Linux");
    expect(deviceName("Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) Gecko/20100101 Firefox/121.0")).toBe("Firefox on macOS");
    expect(deviceName("curl/8")).toBe("Browser");
  });
});

describe("the identity provider's answer in the hash", () => {
  it("reads a pairing and a refusal", () => {
    expect(signedInFrom("#/signed-in/crd_1/usr_2/ws_3/Dana%20Ruiz/Acme")).toEqual({
      device_id: "crd_1",
      participant_id: "usr_2",
      workspace_id: "ws_3",
      name: "Dana Ruiz",
      workspace_name: "Acme",
    });
    expect(signedInFrom("#/signed-in/crd_1")).toBeNull();
    expect(signedInFrom("#/room/x")).toBeNull();
    expect(signInRefusedFrom("#/sign-in-refused/domain_not_allowed/not%20from%20elsewhere.test")).toEqual({
      code: "domain_not_allowed",
      message: "not from elsewhere.test",
    });
    expect(signInRefusedFrom("#/invite/x")).toBeNull();
  });
});
