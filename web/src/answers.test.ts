import { describe, expect, it } from "vitest";
import { inAskedOrder, pickedWords, writePlaceholder } from "./answers";

const options = [
  { label: "Europe", value: "eu" },
  { label: "Asia", value: "ap" },
  { label: "Americas", value: "us" },
];

describe("several choices", () => {
  it("are sent in the order they were asked", () => {
    expect(inAskedOrder(options, ["us", "eu"])).toEqual(["eu", "us"]);
    expect(inAskedOrder(options, new Set(["ap"]))).toEqual(["ap"]);
    expect(inAskedOrder(options, ["zz"])).toEqual([]);
  });
});

describe("what an answered card says was picked", () => {
  it("names a tap, several taps and written words", () => {
    expect(pickedWords(options, { value: "ap" })).toBe("Asia");
    expect(pickedWords(options, { values: ["eu", "us"] })).toBe("Europe, Americas");
    expect(pickedWords(options, { text: "Both, Europe first" })).toBe("Both, Europe first");
    // Written words that are an option are logged as that option, with the words beside it.
    expect(pickedWords(options, { value: "eu", text: "europe" })).toBe("Europe");
    expect(pickedWords([], { value: "x1" })).toBe("x1");
  });

  it("offers writing on every card", () => {
    expect(writePlaceholder(options)).toBe("Or write an answer");
    expect(writePlaceholder([])).toBe("Write your answer");
  });
});
