import { describe, expect, it } from "vitest";
import { cliCommand, connectLines, envFile, startCommand } from "./connect";

const made = { harness_id: "hrn_1", name: "Scout", autonomy: "L1" as const, token: "chips_at_x", space_id: "spc_1", url: "http://mini.local:4431" };

describe("the four lines", () => {
  it("are what chips connect prints, with where Chips says it is", () => {
    expect(connectLines(made, "http://here")).toBe("CHIPS_URL=http://mini.local:4431\nCHIPS_HARNESS_ID=hrn_1\nCHIPS_HARNESS_TOKEN=chips_at_x\nCHIPS_SPACE_ID=spc_1");
    expect(connectLines({ ...made, url: null }, "http://here").split("\n")[0]).toBe("CHIPS_URL=http://here");
  });
});

describe("where they go and the commands", () => {
  it("names the file after the harness", () => {
    expect(envFile("Scout")).toBe("scout.env");
    expect(envFile("Ledger Bot 2")).toBe("ledger-bot-2.env");
    expect(envFile("Café!")).toBe("cafe.env");
    expect(envFile("!!!")).toBe("harness.env");
    expect(startCommand("Scout")).toBe("set -a; . ./scout.env; set +a   # then start Scout in this shell");
  });

  it("says the same connection from the command line", () => {
    expect(cliCommand("Scout", true, "L1")).toBe("chips connect custom --name Scout");
    expect(cliCommand("Jacobian", false, "L1")).toBe("chips connect custom --name Jacobian --no-dial");
    expect(cliCommand("Ledger Bot", true, "L2")).toBe("chips connect custom --name 'Ledger Bot' --autonomy L2");
  });
});
