// What the sheet that asks first promises on a harness's behalf (docs/product/spaces.md, Deleting
// one; docs/product/jacobian-channel.md, Deleting a room). A harness that declared follows_rooms
// carries a delete or an archive over to its own side: deleted by its owner, it deletes its
// side too; deleted by somebody else, it archives its side for its owner; archived, it
// archives its side and brings it back on unarchive. The sheet says so for each such
// harness, and nothing on behalf of one that did not declare it. Pure, so it is unit-tested.
import { listWords } from "./lines";
import type { Participant } from "./protocol";

/** A harness in the room that follows it, with the person who owns it. */
export interface Follower {
  id: string;
  name: string;
  ownerId: string | null;
}

/**
 * The harnesses that follow the room, once each, in the room's order. The room sheet shows
 * a harness with its agents here as those agents (docs/adr/0096), so an agent stands for
 * its harness: the harness's capabilities are the ones that matter, as the door reads them
 * (space.erased's `follows`, from the room's harness members).
 */
export function followersOf(members: readonly { participant_id: string }[], directory: ReadonlyMap<string, Participant>): Follower[] {
  const out: Follower[] = [];
  const seen = new Set<string>();
  for (const m of members) {
    const p = directory.get(m.participant_id);
    const harness = p?.kind === "agent" ? directory.get(p.harness_id ?? p.owner_id ?? "") : p;
    if (!harness || harness.kind !== "harness" || seen.has(harness.participant_id)) continue;
    if (!harness.capabilities?.includes("follows_rooms")) continue;
    seen.add(harness.participant_id);
    out.push({ id: harness.participant_id, name: harness.name, ownerId: harness.owner_id });
  }
  return out;
}

/** What a following harness does on its side: deletes it, archives it (for its owner, when
 * somebody else deleted the room), or archives it and brings it back on unarchive. */
export type Side = "deletes" | "archives_for_owner" | "archives";

/** What each follower does when `meId` deletes or archives the room (space.erased's
 * `delete`: true only when the person deleting owns the harness). */
export function followerSides(action: "delete" | "archive", followers: readonly Follower[], meId: string | null): { follower: Follower; side: Side }[] {
  return followers.map((follower) => ({
    follower,
    side: action === "archive" ? "archives" : meId !== null && follower.ownerId === meId ? "deletes" : "archives_for_owner",
  }));
}

/**
 * The sheet's sentences for what the followers do, harnesses that do the same said
 * together: "Scout deletes its side too.", "Jacobian archives its side, for Arjun Rao to
 * delete or bring back.", "Scout archives its side too, and brings it back if the room is
 * unarchived." None when nobody in the room follows it.
 */
export function followWords(sides: readonly { follower: Follower; side: Side }[], personName: (id: string) => string | null): string[] {
  const groups = new Map<string, { side: Side; ownerId: string | null; names: string[] }>();
  for (const { follower, side } of sides) {
    const key = side === "archives_for_owner" ? `${side}:${follower.ownerId ?? ""}` : side;
    const group = groups.get(key) ?? { side, ownerId: follower.ownerId, names: [] };
    group.names.push(follower.name);
    groups.set(key, group);
  }
  return [...groups.values()].map(({ side, ownerId, names }) => {
    const one = names.length === 1;
    const who = listWords(names);
    if (side === "deletes") return one ? `${who} deletes its side too.` : `${who} delete their sides too.`;
    if (side === "archives") {
      return one ? `${who} archives its side too, and brings it back if the room is unarchived.` : `${who} archive their sides too, and bring them back if the room is unarchived.`;
    }
    const owner = (ownerId && personName(ownerId)) || (one ? "its owner" : "their owner");
    return one ? `${who} archives its side, for ${owner} to delete or bring back.` : `${who} archive their sides, for ${owner} to delete or bring back.`;
  });
}
