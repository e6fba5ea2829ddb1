// A question card's answers (ADR 0131): several choices in the
// order they were asked, and what an answered card says was picked — a tap, several, or words.
export interface Option {
  label: string;
  value: string;
}

/** The chosen values in the order the options were asked, whatever order they were ticked in. */
export function inAskedOrder(options: Option[], chosen: Iterable<string>): string[] {
  const picked = new Set(chosen);
  return options.filter((o) => picked.has(o.value)).map((o) => o.value);
}

/** What the answer picked, as the card says it: the options' labels, else the words typed. */
export function pickedWords(options: Option[], answer: Record<string, unknown>): string {
  const label = (v: unknown) => options.find((o) => o.value === v)?.label ?? String(v);
  const values = answer["values"];
  if (Array.isArray(values) && values.length) return values.map(label).join(", ");
  if (answer["value"] != null) return label(answer["value"]);
  return typeof answer["text"] === "string" ? answer["text"] : "";
}

/** The words under the options: every card takes a written answer too. */
export function writePlaceholder(options: Option[]): string {
  return options.length ? "Or write an answer" : "Write your answer";
}
