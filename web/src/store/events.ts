// The socket's events, each folded once in seq order (live.ts): into the rooms list and
// the directory, and into each room that is read (the fold itself is in fold.ts). Part of
// the store (store.ts).
import { lineOf, foldChange, insertLine, LINE_TYPES, reauthor } from "../lines";
import type { AnyEvent } from "../protocol";
import { openedRoom, READ_KEY, type Room } from "./base";
import { foldBeside, foldRun } from "./fold";
import { Writes } from "./writes";

// What changes who may answer a room's cards: a card asked or answered, a run ended.
const CARD_TYPES = new Set(["approval.request", "question.ask", "approval.resolved", "question.answered", "question.expired", "run.completed", "run.failed", "run.cancel"]);
/** Events that change who is who (the directory is read again after them). */
const DIRECTORY_TYPES = new Set(["participant.joined", "person.updated", "harness.declared", "agent.registered", "agent.updated", "agent.attached", "agent.released"]);
/** Events that change a room's job or its ceiling (its spend is read again after them). */
const SPEND_TYPES = new Set(["usage", "budget.warning", "exchange.set", "space.spend_ceiling_set"]);

export abstract class Events extends Writes {
  private spendTimers = new Map<string, ReturnType<typeof setTimeout>>();

  /** Rooms off this person's list (left, or erased): dropped, and off the screen if open. */
  private forget(ids: string[]): void {
    for (const id of ids) {
      this.spaces.delete(id);
      this.rooms.delete(id);
      if (openedRoom() === id) location.hash = "#/";
    }
  }

  apply(events: AnyEvent[]): void {
    const fresh = this.gate.pass(events);
    if (!fresh.length) return;
    for (const e of fresh) this.fold(e);
    this.changed();
  }

  private fold(e: AnyEvent): void {
    const f = e as unknown as Record<string, unknown>;
    const spaceId = f["space_id"] as string | undefined;
    if (DIRECTORY_TYPES.has(e.type)) this.watchDirectory(100);
    // The caps reach every client through the log (docs/product/messages.md, Attachments).
    if (e.type === "attachment.caps_set" && this.features.attachments) void this.loadCaps();
    if (spaceId && this.files.has(spaceId) && ((e.type === "message.post" && f["attachments"]) || e.type === "message.deleted")) {
      void this.loadFiles(spaceId);
    }
    // Left, or taken out, from here or another device: the room and its threads are off
    // my list, and off the screen if open (docs/product/spaces.md, Leaving one).
    if (e.type === "membership.removed" && spaceId && f["participant_id"] === this.me?.id) {
      this.forget([spaceId, ...[...this.spaces.values()].filter((s) => s.parent_space_id === spaceId).map((s) => s.id)]);
      this.refreshList(e.seq);
      return;
    }
    if (e.type === "space.erased") {
      this.forget([spaceId, ...((f["threads"] as string[] | null) ?? [])].filter((id): id is string => !!id));
      this.refreshList(e.seq);
      return;
    }
    // A room made, claimed, or changed by an operation that draws a line (a lock too).
    if (e.type === "space.created" || e.type === "space.claimed" || LINE_TYPES.has(e.type)) {
      this.refreshList(e.seq);
    }
    if (e.type === "message.post" && spaceId) {
      const row = this.spaces.get(spaceId);
      if (row && e.seq > row.last_seq) {
        row.last_seq = e.seq;
        row.message_count += 1;
        // My own words are never unread to me, from whichever device they came.
        if (e.actor.id === this.me?.id) {
          const key = READ_KEY + spaceId;
          localStorage.setItem(key, String(Number(localStorage.getItem(key) ?? "0") + 1));
        }
      }
      if (row && openedRoom() === spaceId && document.visibilityState === "visible") this.markRead(spaceId);
      // My words are back: the line waiting in the outbox is the logged one now.
      const key = this.keyBySeq.get(e.seq);
      if (key) this.sending.delete(key);
    }
    if (!spaceId) return;
    const room = this.rooms.get(spaceId);
    if (!room) return;
    if (room.loading) {
      room.pending.push(e);
      return;
    }
    this.foldRoom(room, e);
  }

  protected override foldRoom(room: Room, e: AnyEvent): void {
    if (e.seq <= room.asOf && e.type !== "message.post") return;
    const f = e as unknown as Record<string, unknown>;
    foldBeside(room, e, this.nameOf);
    if (SPEND_TYPES.has(e.type) || (e.actor.kind === "person" && this.features.referee)) this.refreshSpend(room.id);
    const line = lineOf(e, this.nameOf, this.me?.id ?? null);
    if (line) {
      const key = this.keyBySeq.get(e.seq);
      const receipt = key ? this.receipts.get(key) : undefined;
      if (receipt && !line.receipt) line.receipt = receipt;
      if (!room.lines.some((l) => l.id === line.id)) room.lines = insertLine(room.lines, line);
      return;
    }
    const messageId = f["message_id"] as string | undefined;
    if (e.type === "message.hidden" && messageId) {
      room.lines = room.lines.filter((l) => l.id !== messageId);
      return;
    }
    if (e.type === "message.shown") {
      void this.reloadRoom(room.id);
      return;
    }
    if (e.type === "membership.replaced") {
      room.lines = reauthor(room.lines, e);
      return;
    }
    if (messageId) {
      const target = room.lines.find((l) => l.id === messageId);
      if (target) {
        const copy = { ...target };
        if (foldChange(copy, e)) room.lines = room.lines.map((l) => (l.id === copy.id ? copy : l));
      }
    }
    // Who may answer the room's cards is the sheet's to say: read it again.
    if (CARD_TYPES.has(e.type)) this.sheetAfter(room.id, e.seq);
    foldRun(room, e, this.me?.id ?? null);
  }

  /** Read the room's spend again (several changes, one read). */
  refreshSpend(spaceId: string): void {
    if (!this.features.referee || this.spendTimers.has(spaceId)) return;
    this.spendTimers.set(
      spaceId,
      setTimeout(async () => {
        this.spendTimers.delete(spaceId);
        const room = this.rooms.get(spaceId);
        if (!room) return;
        try {
          const read = await this.api!.spend(spaceId);
          room.spend = read;
          this.changed();
        } catch {
          /* the next change reads it again */
        }
      }, 300),
    );
  }
}
