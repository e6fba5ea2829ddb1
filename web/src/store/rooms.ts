// A room's reads: a room opened (its sheet, its last page of lines, its runs and cards, its
// spend and pause), read again, its sheet read again after a change, its older lines and its
// Files. Part of the store (store.ts).
import { ApiError } from "../api";
import type { JobSpend, Pause } from "../agents";
import { foldBeside } from "./fold";
import { PAGE, StoreBase, type Room } from "./base";

export abstract class RoomReads extends StoreBase {
  private sheetReads = new Map<string, { seq: number }>();

  room(spaceId: string): Room {
    let room = this.rooms.get(spaceId);
    if (!room) {
      room = {
        id: spaceId,
        loading: true,
        asOf: 0,
        lines: [],
        start: false,
        loadingOlder: false,
        sheet: null,
        runs: new Map(),
        cards: new Map(),
        pending: [],
        error: null,
        pause: null,
        spend: null,
        asks: new Map(),
        work: [],
      };
      this.rooms.set(spaceId, room);
      void this.loadRoom(room);
    }
    return room;
  }

  private async loadRoom(room: Room): Promise<void> {
    const api = this.api!;
    const after = this.gate.last ?? undefined;
    try {
      const [sheet, page, spend] = await Promise.all([
        api.sheet(room.id, after),
        api.lines(room.id, Number.MAX_SAFE_INTEGER, PAGE, after),
        this.loadSpend(room.id),
      ]);
      room.sheet = sheet;
      room.asOf = page.as_of_seq;
      room.lines = page.messages;
      room.start = page.messages.length < PAGE;
      room.asks = new Map();
      for (const e of page.events ?? []) foldBeside(room, e, this.nameOf);
      // The pause as the spend read says it now: it may have begun before this page.
      if (spend) {
        const { paused, ...job } = spend;
        room.spend = job;
        room.pause = paused ?? null;
      }
      // The runs as of the page at least: the events the page's seq covers are not folded
      // again, so a run read from an older checkpoint than the page's would never be drawn.
      const runs = await api.runs(room.id, page.as_of_seq);
      const details = await Promise.all(runs.runs.slice(0, 10).map((r) => api.run(r.run_id, page.as_of_seq).catch(() => r)));
      for (const run of details) {
        room.runs.set(run.run_id, run);
        for (const card of run.cards ?? []) room.cards.set(card.id, card);
      }
      room.error = null;
    } catch (err) {
      room.error = (err as Error).message;
    }
    room.loading = false;
    const pending = room.pending;
    room.pending = [];
    for (const e of pending) this.foldRoom(room, e);
    this.changed();
  }

  /** The room's spend and pause, or null where this gateway has no referee (no route). */
  private async loadSpend(spaceId: string): Promise<(JobSpend & { paused?: Pause | null }) | null> {
    try {
      const read = await this.api!.spend(spaceId);
      if (!this.features.referee) {
        this.features = { ...this.features, referee: true };
      }
      return read;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) this.features = { ...this.features, referee: false };
      return null;
    }
  }

  async reloadRoom(spaceId: string): Promise<void> {
    const room = this.rooms.get(spaceId);
    if (!room || room.loading) return;
    room.loading = true;
    room.pending = [];
    await this.loadRoom(room);
  }

  /** Read a room's sheet again once the read models hold `seq` (several changes, one read). */
  protected sheetAfter(spaceId: string, seq: number): void {
    const waiting = this.sheetReads.get(spaceId);
    if (waiting) {
      waiting.seq = Math.max(waiting.seq, seq);
      return;
    }
    const read = { seq };
    this.sheetReads.set(spaceId, read);
    setTimeout(() => {
      this.sheetReads.delete(spaceId);
      void this.reloadSheet(spaceId, read.seq);
    }, 50);
  }

  async reloadSheet(spaceId: string, after?: number): Promise<void> {
    const room = this.rooms.get(spaceId);
    if (!room) return;
    try {
      room.sheet = await this.api!.sheet(spaceId, after);
      this.changed();
    } catch {
      /* left the room, or it is gone */
    }
  }

  /** History backwards: the page of lines before the oldest shown. */
  async loadOlder(spaceId: string): Promise<void> {
    const room = this.rooms.get(spaceId);
    if (!room || room.start || room.loadingOlder || room.loading) return;
    const oldest = room.lines[0]?.seq;
    if (oldest === undefined) {
      room.start = true;
      return;
    }
    room.loadingOlder = true;
    this.changed();
    try {
      const page = await this.api!.lines(spaceId, oldest, PAGE);
      const known = new Set(room.lines.map((l) => l.id));
      room.lines = [...page.messages.filter((l) => !known.has(l.id)), ...room.lines];
      room.start = page.messages.length < PAGE;
      // Older asks and referee lines; the pause and who is working stand as they are now.
      const { pause, work } = room;
      for (const e of page.events ?? []) foldBeside(room, e, this.nameOf);
      room.pause = pause;
      room.work = work;
    } finally {
      room.loadingOlder = false;
      this.changed();
    }
  }

  async loadFiles(spaceId: string): Promise<void> {
    try {
      this.files.set(spaceId, (await this.api!.files(spaceId)).files);
    } catch (err) {
      this.toast((err as Error).message);
    }
    this.changed();
  }
}
