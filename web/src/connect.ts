// Agents → Connect a harness, as pure rules (docs/product/jacobian-channel.md, Connect it): the
// four lines a harness is given, what to save them as, and the same from the command line.
import type { Level } from "./policy";

/** What POST /v1/harnesses answers. */
export interface Connected {
  harness_id: string;
  name: string;
  autonomy: Level;
  token: string;
  space_id: string;
  url?: string | null;
}

/** The four lines, as `chips connect` prints them (CHIPS_URL: where Chips says it is, else here). */
export function connectLines(c: Connected, origin: string): string {
  return [`CHIPS_URL=${c.url || origin}`, `CHIPS_HARNESS_ID=${c.harness_id}`, `CHIPS_HARNESS_TOKEN=${c.token}`, `CHIPS_SPACE_ID=${c.space_id}`].join("\n");
}

/** A file name for the lines: the harness's name in lower case, `scout.env`. */
export function envFile(name: string): string {
  const slug = name
    .normalize("NFKD")
    .replace(/[^\w\s-]/g, "")
    .trim()
    .toLowerCase()
    .replace(/[\s_]+/g, "-");
  return `${slug || "harness"}.env`;
}

/** Starting a program with the lines as its environment (a POSIX shell). */
export function startCommand(name: string): string {
  return `set -a; . ./${envFile(name)}; set +a   # then start ${name} in this shell`;
}

const quoted = (s: string) => (/^[\w.-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** The same connection made from the command line (`chips connect custom`). */
export function cliCommand(name: string, dial: boolean, level: Level): string {
  const tail = !dial ? " --no-dial" : level !== "L1" ? ` --autonomy ${level}` : "";
  return `chips connect custom --name ${quoted(name)}${tail}`;
}
