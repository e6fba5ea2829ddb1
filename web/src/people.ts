// The People page's rules (docs/adr/0144).
import type { Participant } from "./protocol";

/** Who may take over the group rooms of a person being deactivated: the workspace's other
 * active people, guests aside (a guest owns no room), by name. The door decides again. */
export function heirsFor(people: Participant[], leaving: string): Participant[] {
  return people
    .filter((p) => p.kind === "person" && p.participant_id !== leaving && p.active !== false && p.role !== "guest")
    .sort((a, b) => a.name.localeCompare(b.name));
}

// The pages that take the whole screen on a phone, as a room does: the list of rooms is
// left behind them, and their back arrow returns to it.
const FULL_PAGES = new Set(["#/inbox", "#/notifications", "#/people", "#/devices", "#/profile"]);

/** Whether ``route`` shows a page in place of the list of rooms on a phone (the shell's
 * ``in-room``): a room, a workspace page, or one of the person's own pages. */
export function takesThePhone(route: string, roomId: string | null, workspacePage: boolean): boolean {
  return roomId !== null || workspacePage || FULL_PAGES.has(route);
}

/** The server's words as a sentence a person reads: a capital, and a full stop. */
export function asSentence(words: string): string {
  const s = words.charAt(0).toUpperCase() + words.slice(1);
  return /[.!?]$/.test(s) ? s : `${s}.`;
}
