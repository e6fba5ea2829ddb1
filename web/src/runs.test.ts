import { describe, expect, it } from "vitest";
import type { Run } from "./protocol";
import { lastLine, runBy, runnerOf, STATUS_MAX, statusWords } from "./runs";

const status = (s: Partial<Run["status"]>): Run["status"] => ({ phase: null, verb: null, progress: null, text: null, ...s });

describe("whose run it is", () => {
  it("is the agent's when an agent started it, live and read back alike", () => {
    const live = runnerOf({ kind: "agent", id: "agt_j1", harness_id: "hrn_s" });
    expect(live).toEqual({ harness_id: "hrn_s", agent_id: "agt_j1" });
    expect(runBy(live)).toBe("agt_j1");
    // The HTTP run row: harness_id and agent_id side by side.
    expect(runBy({ harness_id: "hrn_s", agent_id: "agt_j1" })).toBe(runBy(live));
  });

  it("is the harness's when the harness runs it as itself", () => {
    const live = runnerOf({ kind: "harness", id: "hrn_s" });
    expect(live).toEqual({ harness_id: "hrn_s", agent_id: null });
    expect(runBy(live)).toBe("hrn_s");
    expect(runBy({ harness_id: "hrn_s", agent_id: null })).toBe("hrn_s");
    expect(runBy({ harness_id: "hrn_s" })).toBe("hrn_s"); // a read-back from before agents
  });
});

describe("a run's status words", () => {
  it("say the verb when there is one, with the phase", () => {
    expect(statusWords(status({ phase: "working", verb: "Reading the PO", text: "ignored" }))).toEqual({ phase: "working", words: "Reading the PO", progress: null });
  });

  it("say the text's last line when there is no verb (Jacobian's thinking bubble)", () => {
    expect(statusWords(status({ phase: "thinking", text: "Reading" }))).toEqual({ phase: "thinking", words: "Reading", progress: null });
    expect(statusWords(status({ text: "First I look.\n  Then   I compare the prices \n\n" }))?.words).toBe("Then I compare the prices");
  });

  it("say the phase or the progress alone, and nothing for an empty status", () => {
    expect(statusWords(status({ phase: "planning" }))).toEqual({ phase: "planning", words: "", progress: null });
    expect(statusWords(status({ progress: 0.5 }))).toEqual({ phase: null, words: "", progress: 0.5 });
    expect(statusWords(status({}))).toBeNull();
    expect(statusWords(status({ phase: " ", verb: "", text: "\n " }))).toBeNull();
  });

  it("cut a long line at a word, ending in an ellipsis", () => {
    const long = `${"word ".repeat(60)}end`;
    const cut = lastLine(long);
    expect(cut.length).toBeLessThanOrEqual(STATUS_MAX);
    expect(cut.endsWith("word…")).toBe(true);
    expect(lastLine("x".repeat(300))).toBe(`${"x".repeat(STATUS_MAX - 1)}…`);
    expect(lastLine("short")).toBe("short");
  });
});
