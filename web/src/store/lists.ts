// The rooms list and the directory, read at the first connection and again after the
// changes that move them; the names and titles they give; what is read or unread; and what
// this gateway serves (search, files and their caps). Part of the store (store.ts).
import { ApiError } from "../api";
import { threadName } from "../lines";
import { handlesOf } from "../markdown";
import type { SpaceRow } from "../protocol";
import { READ_KEY } from "./base";
import { RoomReads } from "./rooms";

export abstract class Lists extends RoomReads {
  private listTimer: ReturnType<typeof setTimeout> | null = null;
  private listAfter = 0;
  private directoryTimer: ReturnType<typeof setTimeout> | null = null;

  protected async detectFeatures(): Promise<void> {
    if (!this.api) return;
    const [search, attachments] = await Promise.all([this.api.has("/v1/search?q=a"), this.loadCaps()]);
    this.features = { ...this.features, search, attachments };
    this.changed();
  }

  /** The caps, and whether this gateway takes files at all (no route: no attach button). */
  async loadCaps(): Promise<boolean> {
    try {
      this.caps = await this.api!.caps();
      this.changed();
      return true;
    } catch (err) {
      // Files not reachable right now still means this gateway serves them.
      return !(err instanceof ApiError && err.status === 404);
    }
  }

  /** The first connection: the directory and the list, and the seq to resume after. */
  protected async loadFirst(): Promise<void> {
    const api = this.api!;
    const [people, list] = await Promise.all([api.participants(), api.spaces()]);
    this.participants = new Map(people.participants.map((p) => [p.participant_id, p]));
    await this.setList(list.spaces, list.archived_count, list.as_of_seq);
    this.gate.last = list.as_of_seq;
    this.changed();
  }

  /**
   * The open rooms, and the rooms read so far that are on neither list dropped (left, or
   * erased, while this client heard nothing of it). A room just archived is off the open
   * list but still mine: with the Archived row not read yet, it is read here to tell the
   * two apart, so a room open on the screen is not read again from nothing (its lines drawn
   * anew, an open menu closed) because somebody archived it.
   */
  private async setList(rows: SpaceRow[], archivedCount: number, after: number): Promise<void> {
    this.spaces = new Map(rows.map((s) => [s.id, s]));
    this.archivedCount = archivedCount;
    const off = [...this.rooms.keys()].filter((id) => !this.spaces.has(id) && !this.archived?.some((a) => a.id === id));
    if (!off.length) return;
    const archived = this.archived ?? (archivedCount > 0 ? (await this.api!.spaces(after, true)).spaces : []);
    for (const id of off) if (!archived.some((a) => a.id === id)) this.rooms.delete(id);
  }

  /** Read the list again once the read models hold `seq` (several changes, one read). */
  refreshList(seq: number): void {
    this.listAfter = Math.max(this.listAfter, seq);
    if (this.listTimer) return;
    this.listTimer = setTimeout(async () => {
      this.listTimer = null;
      const after = this.listAfter;
      try {
        const list = await this.api!.spaces(after);
        // The Archived row, when kept, is read first: the rooms dropped are judged by both lists as they are now.
        if (this.archived !== null) this.archived = (await this.api!.spaces(after, true)).spaces;
        await this.setList(list.spaces, list.archived_count, after);
        for (const room of this.rooms.values()) if (room.sheet) void this.reloadSheet(room.id, after);
        this.changed();
      } catch {
        /* the next change reads it again */
      }
    }, 50);
  }

  async loadArchived(): Promise<void> {
    this.archived = (await this.api!.spaces(this.gate.last ?? undefined, true)).spaces;
    this.changed();
  }

  async reloadDirectory(): Promise<void> {
    if (!this.api) return;
    const people = await this.api.participants();
    this.participants = new Map(people.participants.map((p) => [p.participant_id, p]));
    this.changed();
  }

  /**
   * Read the directory again soon: after events that change who is who, and on a clock,
   * since a harness's face (Restarting…) lives in Redis and no event says it changed
   * (docs/adr/0080, 0100). Every 10 s while the page is seen, every 2 s while a face reads
   * Restarting.
   */
  watchDirectory(delay?: number): void {
    if (this.directoryTimer) clearTimeout(this.directoryTimer);
    const restarting = [...this.participants.values()].some((p) => p.status === "restarting");
    this.directoryTimer = setTimeout(async () => {
      this.directoryTimer = null;
      if (!this.api) return;
      if (document.visibilityState === "visible") await this.reloadDirectory().catch(() => {});
      this.watchDirectory();
    }, delay ?? (restarting ? 2000 : 10000));
  }

  /** handle → participant id, for the mention chips of a room. */
  handles(spaceId: string): Map<string, string> {
    const out = new Map<string, string>();
    const room = this.rooms.get(spaceId);
    const ids = room?.sheet?.members.map((m) => m.participant_id) ?? [...this.participants.keys()];
    for (const id of ids) for (const h of handlesOf(this.nameOf(id))) if (!out.has(h)) out.set(h, id);
    return out;
  }

  title(space: {
    id: string;
    title: string | null;
    kind: string;
    parent_space_id?: string | null;
    root_text?: string | null;
    members?: { participant_id: string }[];
  }): string {
    if (space.title) return space.title;
    if (space.kind === "thread") {
      const parent = space.parent_space_id ? (this.spaces.get(space.parent_space_id) ?? this.archived?.find((s) => s.id === space.parent_space_id)) : undefined;
      return threadName(space.root_text, parent ? this.title(parent) : null);
    }
    const others = (space.members ?? []).map((m) => m.participant_id).filter((id) => id !== this.me?.id);
    return others.length ? others.map(this.nameOf).join(", ") : "Untitled room";
  }

  unread(space: SpaceRow): number {
    const read = Number(localStorage.getItem(READ_KEY + space.id) ?? "0");
    return Math.max(0, space.message_count - read);
  }

  markRead(spaceId: string): void {
    const space = this.spaces.get(spaceId) ?? this.archived?.find((s) => s.id === spaceId);
    if (!space) return;
    const key = READ_KEY + spaceId;
    if (localStorage.getItem(key) !== String(space.message_count)) {
      localStorage.setItem(key, String(space.message_count));
      this.changed();
    }
  }
}
