// What the composer's picker offers: @handles of the room's members, and the commands the
// door reads from a person's message (docs/protocol.md). Pure, so it is unit-tested.
import { listWords } from "./lines";
import { handleFor } from "./markdown";

export const COMMANDS: [string, string][] = [
  ["/add @", "add somebody to the room"],
  ["/remove @", "take somebody out of the room"],
  ["/title ", "rename the room"],
  ["/archive", "archive the room"],
  ["/unarchive", "bring the room back"],
  ["/leave", "leave the room"],
  ["/wrong ", "say the last agent's answer is wrong, and why"],
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
    if ("all".startsWith(q)) picks.push({ label: "all", insert: "@all ", hint: "every agent here" });
    // A handle typed out in full needs no picking: Enter sends.
    if (picks.length === 1 && picks[0]!.insert.trim().toLowerCase() === `@${q}`) return null;
    return picks.length ? { from: before.length - (at[2] ?? "").length - 1, picks } : null;
  }
  if (/^\/?[a-z]*$/i.test(before) && (before.startsWith("/") || before.startsWith("w"))) {
    const picks = COMMANDS.filter(([c]) => c.startsWith(before.toLowerCase()) && before.length > 0).map(([c, hint]) => ({ label: c.trim(), insert: c, hint }));
    return picks.length && !(picks.length === 1 && picks[0]!.insert.trim() === before) ? { from: 0, picks } : null;
  }
  return null;
}


export interface Harness {
  id: string;
  name: string;
}

/** The room's harnesses, in the sheet's order (who a message may be for). */
export function harnessesOf(members: { participant_id: string; kind: string | null; name: string | null }[], nameOf: (id: string) => string): Harness[] {
  return members.filter((m) => m.kind === "harness" || m.kind === "agent").map((m) => ({ id: m.participant_id, name: m.name ?? nameOf(m.participant_id) }));
}

export interface Destination {
  everyone: boolean;
  ids: string[];
  /** What the field says after "To": "Everyone", "Scout", "Scout and Ledger", "No agent". */
  words: string;
  /** A letter for each face shown at the front of the field. */
  faces: string[];
}

/**
 * Where the next message goes, as the composer says it (docs/product/spaces.md, rules 2 and 5):
 * the person's pick when they made one; else where their last message here went; before
 * their first, every harness. `@` and a reply still decide first, at the door.
 */
export function destination(harnesses: Harness[], pick: string[] | null, lastAddressed: string[] | null): Destination {
  const face = (h: Harness) => (h.name.trim()[0] ?? "?").toUpperCase();
  const everyone: Destination = { everyone: true, ids: [], words: "Everyone", faces: harnesses.slice(0, 3).map(face) };
  const named = (ids: string[]): Destination => {
    const chosen = harnesses.filter((h) => ids.includes(h.id));
    if (!chosen.length) return { everyone: false, ids: [], words: "No agent", faces: [] };
    return { everyone: false, ids: chosen.map((h) => h.id), words: listWords(chosen.map((h) => h.name)), faces: chosen.slice(0, 3).map(face) };
  };
  if (pick) return pick.includes("everyone") ? everyone : named(pick);
  if (lastAddressed === null) return everyone;
  const present = harnesses.map((h) => h.id);
  if (present.length > 0 && present.every((id) => lastAddressed.includes(id))) return everyone;
  return named(lastAddressed);
}

/**
 * The route drawn over a message whose address changed from its sender's last one, in a
 * room with several harnesses: "Scout", "everyone", "the people here" (docs/product/spaces.md:
 * one that went where the last did gets none). Keyed by line id.
 */
export function routesOf(lines: { id: string; author_id: string; addressed_to?: string[]; deleted?: boolean }[], harnesses: Harness[]): Map<string, string> {
  const out = new Map<string, string>();
  if (harnesses.length < 2) return out;
  const last = new Map<string, string>();
  for (const line of lines) {
    if (line.addressed_to === undefined) continue;
    const others = harnesses.filter((h) => h.id !== line.author_id);
    const ids = line.addressed_to;
    const words =
      ids.length === 0
        ? "the people here"
        : others.length > 1 && others.every((h) => ids.includes(h.id))
          ? "everyone"
          : listWords(ids.map((id) => harnesses.find((h) => h.id === id)?.name ?? "a harness that left"));
    // A person's first message goes to everyone unless it says otherwise; a harness's, to people.
    const before = last.get(line.author_id) ?? (harnesses.some((h) => h.id === line.author_id) ? "the people here" : "everyone");
    if (words !== before && !line.deleted) out.set(line.id, words);
    last.set(line.author_id, words);
  }
  return out;
}
