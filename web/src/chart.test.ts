import { describe, expect, it } from "vitest";
import { bars, chartWords, dayWords, tokens, type Day } from "./chart";

const day = (d: string, cost_usd: number, tin = 0, tout = 0): Day => ({ day: d, cost_usd, tokens_in: tin, tokens_out: tout, reports: cost_usd || tin ? 1 : 0 });

describe("the harness's chart", () => {
  const days = [day("2026-12-01", 0), day("2026-12-02", 0.5, 100, 20), day("2026-12-03", 0.002, 10, 5), day("2026-12-04", 1, 3000, 400)];

  it("draws a bar a day, the tallest the chart's height, a little day a sliver, nothing none", () => {
    const drawn = bars(days, (d) => d.cost_usd, 200, 50);
    expect(drawn.map((b) => b.day)).toEqual(["2026-12-01", "2026-12-02", "2026-12-03", "2026-12-04"]);
    expect(drawn.map((b) => b.height)).toEqual([0, 25, 1, 50]);
    expect(drawn.map((b) => b.y)).toEqual([50, 25, 49, 0]);
    expect(drawn.map((b) => b.x)).toEqual([1, 51, 101, 151]);
    expect(drawn.every((b) => b.width === 48)).toBe(true);
    expect(bars([day("2026-12-01", 0)], (d) => d.cost_usd, 200, 50)[0]!.height).toBe(0);
    expect(bars([], (d) => d.cost_usd, 200, 50)).toEqual([]);
  });

  it("says the total and the busiest day, a cheap day in its own figures", () => {
    expect(chartWords(days, "spend")).toBe("$1.50 in the last 4 days; the most on 4 Dec, $1.00.");
    expect(chartWords(days, "tokens")).toBe("3,535 tokens in the last 4 days; the most on 4 Dec, 3,400 tokens.");
    expect(chartWords([day("2026-11-30", 0.002)], "spend")).toBe("$0.002 in the last 1 day; the most on 30 Nov, $0.002.");
    expect(chartWords([day("2026-12-01", 0)], "spend")).toBe("Nothing spent in the last 1 day.");
    expect(tokens(days[1]!)).toBe(120);
    expect(dayWords("2026-01-09")).toBe("9 Jan");
  });
});
