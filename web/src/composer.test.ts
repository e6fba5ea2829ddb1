import { describe, expect, it } from "vitest";
import { destination, harnessesOf, routesOf } from "./composer";

const scout = { id: "hrn_s", name: "Scout" };
const ledger = { id: "hrn_l", name: "Ledger" };

describe("who the next message is for", () => {
  it("is everyone before the first message", () => {
    expect(destination([scout, ledger], null, null)).toEqual({ everyone: true, ids: [], words: "Everyone", faces: ["S", "L"] });
  });

  it("follows where the last message went, when nothing was picked", () => {
    expect(destination([scout, ledger], null, ["hrn_l"]).words).toBe("Ledger");
    expect(destination([scout, ledger], null, ["hrn_l", "hrn_s"]).words).toBe("Everyone");
    expect(destination([scout, ledger], null, []).words).toBe("No agent");
  });

  it("says the pick, and only harnesses still in the room", () => {
    expect(destination([scout, ledger], ["hrn_s"], ["hrn_l"]).ids).toEqual(["hrn_s"]);
    expect(destination([scout, ledger], ["everyone"], []).everyone).toBe(true);
    expect(destination([scout, ledger], ["hrn_s", "hrn_l"], null).words).toBe("Scout and Ledger");
    expect(destination([ledger], ["hrn_s"], null).words).toBe("No agent");
  });

  it("reads the room's harnesses from its sheet", () => {
    const members = [
      { participant_id: "usr_a", kind: "person", name: "Arjun" },
      { participant_id: "hrn_s", kind: "harness", name: null },
    ];
    expect(harnessesOf(members, () => "Scout")).toEqual([scout]);
  });
});

describe("the route over a message", () => {
  const harnesses = [scout, ledger];
  const line = (id: string, author: string, to: string[]) => ({ id, author_id: author, addressed_to: to });

  it("is drawn only where the address changed from the sender's last", () => {
    const routes = routesOf(
      [line("1", "usr_a", ["hrn_s", "hrn_l"]), line("2", "usr_a", ["hrn_l"]), line("3", "usr_a", ["hrn_l"]), line("4", "hrn_l", []), line("5", "hrn_l", ["hrn_s"]), line("6", "usr_a", ["hrn_s", "hrn_l"])],
      harnesses,
    );
    expect([...routes.entries()]).toEqual([
      ["2", "Ledger"],
      ["5", "Scout"],
      ["6", "everyone"],
    ]);
  });

  it("is never drawn in a room with one harness", () => {
    expect(routesOf([line("1", "usr_a", ["hrn_s"])], [scout]).size).toBe(0);
  });
});
