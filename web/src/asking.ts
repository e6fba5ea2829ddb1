// The + that opens a room and asks a harness into it (docs/adr/0143): every harness that
// takes new spaces is offered as a face; the first tap chooses one, each tap after adds or
// removes one; the room is asked of the first face picked, and every face picked is put in
// it. The + opens on whoever this person asked last. Pure, so the rules are unit-tested.
import type { Participant, SpaceRow } from "./protocol";

/** The faces a room may be asked of: harnesses, still active, that declared new_spaces. */
export function askableFaces(participants: Iterable<Participant>): Participant[] {
  return [...participants]
    .filter((p) => p.kind === "harness" && p.active !== false && (p.capabilities ?? []).includes("new_spaces"))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Whoever this person asked last: the faces of the newest room they opened asking one,
 * the one it was asked of first, then the other faces put in it. Only faces still offered.
 * A face put in stands there as the agent Chips gave it (docs/adr/0154): ``harnessOf``
 * reads each member back to its harness.
 */
export function lastAsked(
  spaces: Iterable<Pick<SpaceRow, "created_by" | "created_at" | "asked_of" | "members">>,
  me: string | null,
  offered: readonly string[],
  harnessOf: (id: string) => string | null | undefined = () => null,
): string[] {
  const mine = [...spaces].filter((s) => s.created_by === me && s.asked_of && offered.includes(s.asked_of));
  if (!mine.length) return [];
  const newest = mine.reduce((a, b) => (Date.parse(b.created_at) > Date.parse(a.created_at) ? b : a));
  const faces = newest.members.map((m) => harnessOf(m.participant_id) ?? m.participant_id);
  const others = [...new Set(faces)].filter((id) => id !== newest.asked_of && offered.includes(id));
  return [newest.asked_of!, ...others];
}

/** A tap on a face: the first chooses it, each after adds or removes one, in the order tapped. */
export function tapFace(picked: readonly string[], id: string): string[] {
  return picked.includes(id) ? picked.filter((p) => p !== id) : [...picked, id];
}

/** The space.created the + sends: asked of the first face picked, with every face in it. */
export function askedRoom(title: string, picked: readonly string[]): Record<string, unknown> {
  const event: Record<string, unknown> = { type: "space.created", kind: "group", members: [...picked] };
  if (title.trim()) event["title"] = title.trim();
  if (picked.length) event["asked_of"] = picked[0];
  return event;
}
