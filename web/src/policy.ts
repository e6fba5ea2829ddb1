// A harness's autonomy dial and its owner's rules in the app, as pure rules (docs/adr/0130):
// what each level does in a sentence, a rule in words, and the body PUT /v1/harnesses/:id/policy
// is sent — or why the form can't be sent as it stands.
export type Level = "off" | "L0" | "L1" | "L2" | "L3";
export type Effect = "allow" | "ask" | "deny";

export interface Rule {
  action: string;
  args?: string | null;
  effect: Effect;
}

/** What GET /v1/harnesses/:id/policy answers. */
export interface Policy {
  harness_id: string;
  autonomy: Level;
  rules: Rule[];
}

export const LEVELS: { level: Level; name: string; words: string }[] = [
  { level: "L0", name: "L0 · Ask for everything", words: "Nothing is allowed without a person, whatever the rules say." },
  { level: "L1", name: "L1 · Allow what your rules allow, if it is not risky", words: "An allow rule allows an action that claims no risk; a risky one is asked." },
  { level: "L2", name: "L2 · Allow what your rules allow", words: "An allow rule allows what it matches the moment the card goes up." },
  { level: "L3", name: "L3 · Allow all but what your rules stop", words: "Anything no rule denies or asks about is allowed." },
  { level: "off", name: "Off · It keeps its own permissions", words: "The harness takes no dial: its own permission model decides, and Chips decides nothing." },
];

export const EFFECTS: { effect: Effect; name: string }[] = [
  { effect: "allow", name: "Allow" },
  { effect: "ask", name: "Always ask" },
  { effect: "deny", name: "Deny" },
];

export const MAX_RULES = 100;

/** A rule as its owner would say it. */
export function ruleWords(r: Rule): string {
  const verb = r.effect === "allow" ? "Allow" : r.effect === "ask" ? "Always ask about" : "Deny";
  return `${verb} ${r.action}${r.args ? ` with ${r.args}` : " with any arguments"}`;
}

/** A rule row as typed (the arguments blank for any). */
export interface RuleRow {
  action: string;
  args: string;
  effect: Effect;
}

export function rows(rules: Rule[]): RuleRow[] {
  return rules.map((r) => ({ action: r.action, args: r.args ?? "", effect: r.effect }));
}

export type Sendable = { ok: true; body: { autonomy: Level; rules: Rule[] } } | { ok: false; row: number | null; error: string };

/** The body of the PUT, or why not: a rule with no action, too long, said twice, or too many. */
export function policyBody(level: Level, typed: RuleRow[]): Sendable {
  const kept = typed.filter((r) => r.action.trim() || r.args.trim());
  if (kept.length > MAX_RULES) return { ok: false, row: null, error: `A harness has at most ${MAX_RULES} rules; this has ${kept.length}.` };
  const rules: Rule[] = [];
  const seen = new Map<string, number>();
  for (const r of kept) {
    const action = r.action.trim();
    const args = r.args.trim();
    const n = typed.indexOf(r) + 1;
    if (!action) return { ok: false, row: n, error: `Rule ${n} has arguments but no action: name the action it is about (jacobian.shell.execute, or jacobian.mail.* for all of them).` };
    if (action.length > 200) return { ok: false, row: n, error: `Rule ${n}'s action is longer than 200 characters.` };
    if (args.length > 2000) return { ok: false, row: n, error: `Rule ${n}'s arguments are longer than 2000 characters.` };
    const key = JSON.stringify([action, args]);
    const first = seen.get(key);
    if (first !== undefined) return { ok: false, row: n, error: `Rule ${n} is about the same action and arguments as rule ${first}: keep one of them.` };
    seen.set(key, n);
    rules.push(args ? { action, args, effect: r.effect } : { action, effect: r.effect });
  }
  return { ok: true, body: { autonomy: level, rules } };
}

/** What the level does with rules like these, in a sentence under the dial. */
export function dialWords(level: Level, rules: Rule[]): string {
  const l = LEVELS.find((x) => x.level === level)!;
  if (level === "off" && rules.length) return `${l.words} Your rules are kept for when it takes the dial again.`;
  if (level === "L0" && rules.some((r) => r.effect === "allow")) return `${l.words} Your allow rules wait for a higher level.`;
  return l.words;
}
