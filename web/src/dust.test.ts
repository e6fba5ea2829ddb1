import { describe, expect, it } from "vitest";
import { dustPlan, motionFor } from "./dust";

describe("a line's dust", () => {
  it("has specks across the bubble, leaving as the wipe from the left reaches them", () => {
    const specks = dustPlan(240, 48, 7);
    expect(specks.length).toBe(80);
    for (const s of specks) {
      expect(s.x).toBeGreaterThanOrEqual(0);
      expect(s.x).toBeLessThan(240);
      expect(s.y).toBeLessThan(48);
      expect(s.dy).toBeLessThan(0); // up
      expect(s.dx).toBeGreaterThan(0); // and away
      expect(s.delay).toBeCloseTo((s.x / 240) * 0.5);
    }
    // The same bubble is the same dust, so Undo runs the very same backwards.
    expect(dustPlan(240, 48, 7)).toEqual(specks);
    expect(dustPlan(60, 20, 1).length).toBe(8);
    expect(dustPlan(0, 20)).toEqual([]);
  });

  it("is a plain fade under Reduce Motion", () => {
    expect(motionFor(true)).toBe("fade");
    expect(motionFor(false)).toBe("dust");
  });
});
