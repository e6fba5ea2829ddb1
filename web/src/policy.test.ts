import { describe, expect, it } from "vitest";
import { dialWords, policyBody, rows, ruleWords } from "./policy";

describe("a rule in words", () => {
  it("says the effect, the action and the arguments", () => {
    expect(ruleWords({ action: "jacobian.shell.execute", args: "ls *", effect: "allow" })).toBe("Allow jacobian.shell.execute with ls *");
    expect(ruleWords({ action: "jacobian.mail.*", effect: "deny" })).toBe("Deny jacobian.mail.* with any arguments");
    expect(ruleWords({ action: "x", args: null, effect: "ask" })).toBe("Always ask about x with any arguments");
  });
});

describe("the body the dial and the rules send", () => {
  it("keeps the rules as typed, trimmed, leaving out blank rows and blank arguments", () => {
    const typed = [
      { action: " jacobian.shell.execute ", args: "ls *", effect: "allow" as const },
      { action: "", args: "", effect: "allow" as const },
      { action: "jacobian.mail.*", args: "  ", effect: "deny" as const },
    ];
    expect(policyBody("L2", typed)).toEqual({
      ok: true,
      body: { autonomy: "L2", rules: [{ action: "jacobian.shell.execute", args: "ls *", effect: "allow" }, { action: "jacobian.mail.*", effect: "deny" }] },
    });
    expect(rows([{ action: "a", effect: "ask" }])).toEqual([{ action: "a", args: "", effect: "ask" }]);
  });

  it("says which row can't be sent, and why", () => {
    const noAction = policyBody("L1", [{ action: "a", args: "", effect: "allow" }, { action: "", args: "rm *", effect: "deny" }]);
    expect(noAction).toEqual({ ok: false, row: 2, error: expect.stringContaining("Rule 2 has arguments but no action") });
    const twice = policyBody("L1", [{ action: "a", args: "x", effect: "allow" }, { action: "a", args: "x", effect: "deny" }]);
    expect(twice).toEqual({ ok: false, row: 2, error: "Rule 2 is about the same action and arguments as rule 1: keep one of them." });
    const many = policyBody("L1", Array.from({ length: 101 }, (_, i) => ({ action: `a${i}`, args: "", effect: "allow" as const })));
    expect(many).toEqual({ ok: false, row: null, error: "A harness has at most 100 rules; this has 101." });
    expect(policyBody("L1", [{ action: "a".repeat(201), args: "", effect: "allow" }]).ok).toBe(false);
  });
});

describe("what the level does with the rules", () => {
  it("says rules wait while the level can't use them", () => {
    expect(dialWords("L2", [])).toBe("An allow rule allows what it matches the moment the card goes up.");
    expect(dialWords("off", [{ action: "a", effect: "allow" }])).toContain("Your rules are kept for when it takes the dial again.");
    expect(dialWords("L0", [{ action: "a", effect: "allow" }])).toContain("Your allow rules wait for a higher level.");
    expect(dialWords("L0", [{ action: "a", effect: "deny" }])).not.toContain("wait");
  });
});
