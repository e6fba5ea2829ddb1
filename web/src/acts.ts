// What the room's menu and its sheet offer: only the acts the door would take from this
// person, as its rules decide them (eventlog rules/spaces.py, erase.py, threads.py,
// referee.py; spec/spaces.md, Who may do what in a space). An act the door would refuse is
// left out rather than offered and refused; the one thing said instead is a locked room's
// lock, since Rename, Archive and Delete are missing for that reason alone. Pure, so each
// door rule is a unit test (acts.test.ts).
import { deleteArchivesInstead } from "./follows";
import type { Participant } from "./protocol";

/** What the rules read of a room: its row or its sheet. */
export interface RoomFacts {
  kind: string;
  state: string;
  locked: boolean;
  home_of: string | null;
  /** The key a harness opened it by; absent or null for one opened by hand. */
  key?: string | null;
}

export interface RoomActs {
  /** Rename… (space.updated with a title). */
  rename: boolean;
  /** Archive… (space.updated closed). */
  archive: boolean;
  /** Unarchive (space.updated open). */
  unarchive: boolean;
  /** Lock changes, or Unlock changes (space.lock_set). */
  lock: boolean;
  unlock: boolean;
  /** Delete…: "erase" erases the room; "archive" archives it instead (a direct room nobody
   * could open again); null is not offered. */
  delete: "erase" | "archive" | null;
  /** Pause the agents, or Let them carry on (exchange.set). */
  pause: boolean;
  /** The sheet's Add (membership.added). */
  add: boolean;
  /** The muted line the menu shows for a locked room, or null. */
  lockedNote: string | null;
}

/** Whether a workspace role is an owner's or an admin's (who locks and deletes any room). */
export function isAdmin(role: string | null | undefined): boolean {
  return role === "owner" || role === "admin";
}

/**
 * The acts a person with `standing` in the room (null: not in it) and `role` in the
 * workspace may take from the room's menu and sheet, as the door decides them:
 *
 * - a thread has no title, state, lock or members of its own and is deleted with its room
 *   (rules/threads.py, erase.py): it offers only pausing its agents;
 * - rename, archive and unarchive are a member's or owner's, never a guest's, and no person
 *   does them while the room's changes are locked; a harness's home is never archived;
 * - lock and unlock are the room's owner's, or a workspace owner's or admin's;
 * - delete is the room's owner's, or a workspace owner's or admin's, never for a home, nor
 *   while locked; a direct room nobody could open again is archived instead, which is then
 *   decided as an archive (so not a guest's, and not once archived);
 * - pausing the agents is any person's in the room, a guest's too;
 * - adding somebody is a member's or owner's, not a guest's.
 */
export function roomActs(room: RoomFacts, standing: string | null | undefined, role: string | null | undefined): RoomActs {
  const none: RoomActs = { rename: false, archive: false, unarchive: false, lock: false, unlock: false, delete: null, pause: false, add: false, lockedNote: null };
  if (!standing) return none;
  const thread = room.kind === "thread";
  const closed = room.state === "closed";
  const home = room.home_of !== null;
  const guest = standing === "guest";
  const ownerOrAdmin = standing === "owner" || isAdmin(role);
  const changes = !thread && !guest && !room.locked;
  const mayLock = !thread && ownerOrAdmin;
  let erase: RoomActs["delete"] = null;
  if (!thread && ownerOrAdmin && !home && !room.locked) {
    if (!deleteArchivesInstead(room)) erase = "erase";
    else if (!guest && !closed) erase = "archive";
  }
  const locked = !thread && room.locked;
  return {
    rename: changes,
    archive: changes && !closed && !home,
    unarchive: changes && closed,
    lock: mayLock && !room.locked,
    unlock: mayLock && room.locked,
    delete: erase,
    pause: true,
    add: !thread && !guest,
    lockedNote: locked ? (mayLock ? "Changes are locked." : "Changes are locked; the room's owner or an admin can unlock them.") : null,
  };
}

/**
 * Whether the sheet offers Leave (yourself) or Remove (somebody else) on a member's row
 * (membership.removed): anyone leaves; only the room's owner takes others out, a workspace
 * admin not as such; a harness here only behind its agents (standing "agents") is taken out
 * with them; a Main agent stays in its Main room; a thread has no members of its own.
 */
export function mayRemove(
  room: RoomFacts,
  myStanding: string | null | undefined,
  meId: string | null | undefined,
  member: { participant_id: string; standing: string },
  who: Participant | undefined,
): boolean {
  if (!myStanding || room.kind === "thread" || member.standing === "agents") return false;
  if (who?.kind === "agent" && who.main) return false;
  return member.participant_id === meId || myStanding === "owner";
}

/** Whether the room is a Main room: a harness's home once it has a Main agent, which takes
 * people and no other agent or harness (ADR 0071). */
export function isMainRoom(room: RoomFacts, directory: Iterable<Participant>): boolean {
  if (room.home_of === null) return false;
  for (const p of directory) if (p.kind === "agent" && p.main && (p.harness_id ?? p.owner_id) === room.home_of) return true;
  return false;
}

/**
 * Whether the sheet's Add lists somebody not in the room (membership.added, as the door
 * takes it): a person always; a harness, but not into a Main room; an agent only if it is
 * active, not a Main agent, the room is open and not a Main room. An agent in another room
 * is listed: adding it offers to move it (spec/websocket.md).
 */
export function mayAddWho(room: RoomFacts, who: Participant, mainRoom: boolean): boolean {
  if (who.kind === "harness") return !mainRoom;
  if (who.kind === "agent") return who.state !== "archived" && !who.main && room.state === "open" && !mainRoom;
  return true;
}

/** What a line's menu offers (rules/words.py, messages.py). */
export interface LineActs {
  reply: boolean;
  react: boolean;
  pin: boolean;
  edit: boolean;
  hideForMe: boolean;
  deleteForEveryone: boolean;
}

/**
 * The acts a person with `standing` in the room and `role` in the workspace may take on a
 * line, as the door decides them:
 *
 * - a message taken back (a tombstone) takes nothing more but Delete for me;
 * - Delete for me is anybody's, on anybody's message;
 * - Edit is the author's, on words of theirs that stand;
 * - Pin is anybody's in the room but a guest's;
 * - taking a message back for everyone is its author's, the room's owner's, or a workspace
 *   owner's or admin's;
 * - Reply and Edit go through the composer, which an archived room does not show.
 */
export function lineActs(
  line: { author_id: string; kind: string; deleted: boolean },
  meId: string | null | undefined,
  standing: string | null | undefined,
  role: string | null | undefined,
  closed: boolean,
): LineActs {
  const none: LineActs = { reply: false, react: false, pin: false, edit: false, hideForMe: false, deleteForEveryone: false };
  if (!standing || !meId) return none;
  if (line.deleted) return { ...none, hideForMe: true };
  const mine = line.author_id === meId;
  return {
    reply: !closed,
    react: true,
    pin: standing !== "guest",
    edit: mine && line.kind === "text" && !closed,
    hideForMe: true,
    deleteForEveryone: mine || standing === "owner" || isAdmin(role),
  };
}
