/**
 * A run as the room draws it, as pure rules: whose it is, and the words of its status.
 *
 * A run is its agent's when an agent's turn (docs/adr/0075): live, run.started's actor is
 * the agent with its harness beside it; read back, the run row carries `agent_id` beside
 * `harness_id`. Both name the agent, so a reload draws what the socket drew.
 */
import type { Actor, Run } from "./protocol";

/** The longest status line drawn; a longer one is cut at a word and ends in "…". */
export const STATUS_MAX = 120;

/** Who a run.started's actor says runs it: the agent (null for a harness as itself), and its harness. */
export function runnerOf(actor: Actor): { harness_id: string; agent_id: string | null } {
  if (actor.kind === "agent") return { harness_id: actor.harness_id ?? actor.id, agent_id: actor.id };
  return { harness_id: actor.id, agent_id: null };
}

/** The participant a run is named after: its agent when it has one, else its harness. */
export function runBy(run: Pick<Run, "harness_id" | "agent_id">): string {
  return run.agent_id || run.harness_id;
}

/** The last non-blank line of a text, its spaces folded, cut to `max` characters. */
export function lastLine(text: string, max = STATUS_MAX): string {
  const lines = text.split(/\r?\n/).map((l) => l.replace(/\s+/g, " ").trim());
  const last = lines.filter((l) => l !== "").pop() ?? "";
  if (last.length <= max) return last;
  const cut = last.slice(0, max - 1);
  const space = cut.lastIndexOf(" ");
  return `${(space > max / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/**
 * What a run's latest status says: its phase, and its words — the verb when it has one,
 * else the last line of its text (Jacobian's thinking bubble sends the reasoning's last
 * line as `text`, with no verb: docs/product/jacobian-channel.md), and how far. Null when it says nothing.
 */
export function statusWords(status: Run["status"]): { phase: string | null; words: string; progress: number | null } | null {
  const phase = status.phase?.trim() || null;
  const words = status.verb?.trim() || lastLine(status.text ?? "");
  const progress = status.progress ?? null;
  if (!phase && !words && progress === null) return null;
  return { phase, words, progress };
}
