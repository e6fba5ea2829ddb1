// What the composer's picker offers: @handles of the room's members, and the commands the
// door reads from a person's message (docs/protocol.md). Pure, so it is unit-tested.
import { handleFor } from "./markdown";

export const COMMANDS: [string, string][] = [
  ["/add @", "add somebody to the room"],
  ["/remove @", "take somebody out of the room"],
  ["/title ", "rename the room"],
  ["/archive", "archive the room"],
  ["/unarchive", "bring the room back"],
  ["/leave", "leave the room"],
  ["/wrong ", "say the last harness answer is wrong, and why"],
  ["/stop", "stop every run going in the room"],
  ["wreply ", "answer a question by its id: wreply <id> <answer>"],
];

export interface Pick {
  label: string;
  insert: string;
  hint: string;
}

/** What the picker offers for the text before the caret. */
export function suggestions(before: string, people: { name: string; kind: string }[]): { from: number; picks: Pick[] } | null {
  const at = /(^|\s)@([\w·.\-']*)$/u.exec(before);
  if (at) {
    const q = (at[2] ?? "").toLowerCase();
    const picks = people
      .filter((p) => handleFor(p.name).toLowerCase().startsWith(q) || p.name.toLowerCase().startsWith(q))
      .slice(0, 8)
      .map((p) => ({ label: p.name, insert: `@${handleFor(p.name)} `, hint: p.kind }));
    if ("all".startsWith(q)) picks.push({ label: "all", insert: "@all ", hint: "every harness here" });
    return picks.length ? { from: before.length - (at[2] ?? "").length - 1, picks } : null;
  }
  if (/^\/?[a-z]*$/i.test(before) && (before.startsWith("/") || before.startsWith("w"))) {
    const picks = COMMANDS.filter(([c]) => c.startsWith(before.toLowerCase()) && before.length > 0).map(([c, hint]) => ({ label: c.trim(), insert: c, hint }));
    return picks.length && !(picks.length === 1 && picks[0]!.insert.trim() === before) ? { from: 0, picks } : null;
  }
  return null;
}

