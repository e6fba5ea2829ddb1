// The harness page's small chart of its usage and spend over time (docs/adr/0143): the
// app draws it as an SVG itself, from GET /v1/harnesses/:id/usage's days. Pure geometry
// and words, so they are unit-tested.
import { moneyWords } from "./lines";

export interface Day {
  day: string;
  tokens_in: number;
  tokens_out: number;
  cost_usd: number;
  reports: number;
}

export interface Bar {
  day: string;
  x: number;
  y: number;
  width: number;
  height: number;
  value: number;
}

/** The chart's bars: one a day, oldest at the left, the tallest day the chart's height; a
 * day with something but little still shows a sliver, a day with nothing none. */
export function bars(days: readonly Day[], value: (d: Day) => number, width: number, height: number): Bar[] {
  const max = Math.max(0, ...days.map(value));
  const step = days.length ? width / days.length : 0;
  const gap = Math.min(2, step / 4);
  return days.map((d, i) => {
    const v = value(d);
    const h = max > 0 && v > 0 ? Math.max(1, (v / max) * height) : 0;
    return { day: d.day, x: i * step + gap / 2, y: height - h, width: Math.max(0, step - gap), height: h, value: v };
  });
}

/** "3 Dec", from a UTC day. */
export function dayWords(day: string): string {
  const [, m, d] = day.split("-").map(Number);
  const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  return `${d} ${months[(m ?? 1) - 1]}`;
}

export function tokens(d: Day): number {
  return d.tokens_in + d.tokens_out;
}

/** What the chart says to a screen reader, and under it: the total and the busiest day. */
export function chartWords(days: readonly Day[], what: "spend" | "tokens"): string {
  const value = what === "spend" ? (d: Day) => d.cost_usd : tokens;
  const say = (v: number) => (what === "spend" ? (moneyWords(v) ?? "$0.00") : `${v.toLocaleString("en")} tokens`);
  const total = days.reduce((sum, d) => sum + value(d), 0);
  const span = `the last ${days.length} ${days.length === 1 ? "day" : "days"}`;
  if (total === 0) return `Nothing ${what === "spend" ? "spent" : "used"} in ${span}.`;
  const top = days.reduce((a, b) => (value(b) > value(a) ? b : a));
  return `${say(total)} in ${span}; the most on ${dayWords(top.day)}, ${say(value(top))}.`;
}
