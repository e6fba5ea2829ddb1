// The store's state, and what every part of it shares: the store is one class made of a
// part per job, each a class over this one in its own module (store.ts says what the whole is).
import type { Ask, JobSpend, Pause, Turn } from "../agents";
import type { Api } from "../api";
import type { DeviceRecord } from "../device";
import type { Caps, RoomFile } from "../files";
import { type Live, type LiveState, SeqGate } from "../live";
import type { AnyEvent, Line, Participant, Person, Run, RunCard, Sheet, SpaceRow } from "../protocol";

export const TOKEN_KEY = "chips.token";
export const READ_KEY = "chips.read.";
export const PAGE = 50;

export interface Room {
  id: string;
  loading: boolean;
  asOf: number;
  lines: Line[];
  /** No older lines on the server. */
  start: boolean;
  loadingOlder: boolean;
  sheet: Sheet | null;
  runs: Map<string, Run>;
  cards: Map<string, RunCard>;
  /** Events that arrived while the room was loading. */
  pending: AnyEvent[];
  error: string | null;
  /** Whether the room's agents are paused, by whom (exchange.set; docs/adr/0100). */
  pause: Pause | null;
  /** The job's spend against the room's ceiling (GET /v1/spaces/:id/spend), once read. */
  spend: JobSpend | null;
  /** A person's asks of a harness for an agent here (agent.fork, agent.asked), by id. */
  asks: Map<string, Ask>;
  /** The turns going in the room (room.working, room.idle), as last told. */
  work: Turn[];
}

/** The room's ``agent_elsewhere`` refusal, answered by offering to move the agent. */
export interface Elsewhere {
  agentId: string;
  spaceId: string | null;
}

export interface Toast {
  id: number;
  text: string;
  undo?: () => void;
}

type Listener = () => void;

/** The room the page shows (#/room/<id>, or #/room/<id>/at/<line>), or null. */
export function openedRoom(): string | null {
  if (!location.hash.startsWith("#/room/")) return null;
  return decodeURIComponent(location.hash.slice("#/room/".length).split("/at/")[0] ?? "");
}

export abstract class StoreBase {
  token: string | null = localStorage.getItem(TOKEN_KEY);
  /** This browser as a paired device (docs/adr/0125), once read from IndexedDB. */
  device: DeviceRecord | null = null;
  /** Until the device is read: nothing to show yet. */
  booting = true;
  me: Person | null = null;
  workspaceId: string | null = null;
  state: LiveState = "connecting";
  participants = new Map<string, Participant>();
  spaces = new Map<string, SpaceRow>();
  archivedCount = 0;
  archived: SpaceRow[] | null = null;
  rooms = new Map<string, Room>();
  toasts: Toast[] = [];
  /** What this gateway serves: search, files, and the referee's spend and pause. */
  features = { search: false, attachments: false, referee: false };
  /** What a file of each kind may weigh here (GET /v1/uploads/caps), once known. */
  caps: Caps | null = null;
  /** Each room's Files (GET /v1/spaces/:id/files), for the rooms whose sheet asked. */
  files = new Map<string, RoomFile[]>();
  /** Lines hidden for me whose Undo was pressed: their dust runs backwards when they are drawn again. */
  returning = new Set<string>();
  /** The composer's pick of who the next message is for, by room: harness ids or everyone. */
  picks = new Map<string, string[]>();
  signInError: string | null = null;
  api: Api | null = null;
  live: Live | null = null;
  gate = new SeqGate();
  /** Local lines for words still in the outbox, by key. */
  sending = new Map<string, Line & { space_id: string }>();
  private listeners = new Set<Listener>();
  private toastId = 0;
  version = 0;
  /** What others keep beside the store (the inbox, inbox.ts): told of each hello, each notification frame, and signing out. */
  readonly hooks = {
    hello: [] as (() => void)[],
    notification: [] as ((frame: Record<string, unknown>) => void)[],
    signOut: [] as (() => void)[],
  };

  subscribe(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  changed(): void {
    this.version += 1;
    for (const fn of this.listeners) fn();
  }

  nameOf = (id: string): string => {
    if (id === this.me?.id) return this.me.name;
    return this.participants.get(id)?.name ?? (id.startsWith("sys") ? "Chips" : "Someone");
  };

  toast(text: string, undo?: () => void): void {
    const toast: Toast = { id: ++this.toastId, text, ...(undo ? { undo } : {}) };
    this.toasts = [...this.toasts, toast];
    this.changed();
    setTimeout(() => {
      this.toasts = this.toasts.filter((t) => t.id !== toast.id);
      this.changed();
    }, 5000);
  }

  /** Fold one of the socket's events into a room that is read (events.ts). */
  protected abstract foldRoom(room: Room, e: AnyEvent): void;
}
