// The shapes the app reads: events (their bodies generated from the catalogue's JSON
// Schemas, src/gen/events.ts), the socket's frames and the HTTP answers it uses (generated
// from the gateway's OpenAPI and AsyncAPI documents, src/gen/api.ts).
//
// The frames are the generated ones, with the events in them narrowed by type. The HTTP
// answers keep the app's own names and the fields only the app adds (a line's outbox
// state, a card learnt to be decided elsewhere); each is checked against the generated
// answer at the foot of this file, so a field the gateway stops sending, or sends as
// another type, fails `npm run typecheck`.
import type { EventBodies, EventType } from "./gen/events";
import type { Schemas } from "./gen/api";
import type { LinkedFile } from "./files";

export type { EventBodies, EventType } from "./gen/events";
export type * from "./gen/events";

export interface Actor {
  kind: "person" | "harness" | "agent" | "system" | "operator";
  id: string;
  /** An agent's harness, beside the agent (docs/adr/0075). */
  harness_id?: string | null;
}

/** What Chips fills in on every logged event (docs/protocol.md, Events). */
export interface Envelope {
  v: number;
  id: string;
  seq: number;
  ts: string;
  workspace_id: string;
  actor: Actor;
}

/** A logged event as a client is sent it: the envelope, then its body. */
export type LoggedEvent<T extends EventType = EventType> = T extends EventType
  ? Envelope & Omit<EventBodies[T], "type"> & { type: T } & Delivered
  : never;

/** Fields Chips adds at delivery: the message's id, a receipt, a decision made elsewhere. */
export interface Delivered {
  message_id?: string;
  resolved_elsewhere?: boolean;
  run_receipt?: { idempotency_key: string; disposition: "queued" | "steered"; run_ids: string[] } | null;
}

/** Any event, narrowed by its type. */
export type AnyEvent = LoggedEvent | (Envelope & { type: string; [field: string]: unknown });

export function isType<T extends EventType>(e: AnyEvent, type: T): e is LoggedEvent<T> {
  return e.type === type;
}

export type Person = Schemas["HelloPerson"];

/** What the gateway sends down the socket, its events narrowed by their type. */
export type ServerFrame =
  | Exclude<Schemas["ServerFrame"], { frame: "event" } | { frame: "events" }>
  | { frame: "event"; event: AnyEvent }
  | { frame: "events"; events: AnyEvent[] };

/** What the app sends up the socket. */
export type ClientFrame = Schemas["ClientFrame"];

// --- HTTP answers ----------------------------------------------------------------------

export interface SpaceRow {
  id: string;
  kind: "direct" | "group" | "thread";
  title: string | null;
  state: "open" | "closed";
  home_of: string | null;
  /** The key a harness opened it by (null for one opened by hand). */
  key?: string | null;
  locked: boolean;
  created_by: string;
  created_at: string;
  last_seq: number;
  message_count: number;
  parent_space_id: string | null;
  root_message_id: string | null;
  /** A thread's first words: those of the message it was opened on (null for a room, or a root taken back). */
  root_text?: string | null;
  /** The harness a person opened it asking of (space.created asked_of), or null. */
  asked_of?: string | null;
  members: { participant_id: string; standing: string }[];
}

export interface SpaceList {
  as_of_seq: number;
  archived_count: number;
  spaces: SpaceRow[];
}

export interface Member {
  participant_id: string;
  name: string | null;
  kind: string | null;
  standing: string;
  /** The agent that leads the room (docs/product/websocket.md, Who leads), once a person chose one. */
  lead?: boolean;
}

export interface Sheet extends Omit<SpaceRow, "members"> {
  as_of_seq: number;
  members: Member[];
  /** The room's lead (ADR 0090); absent where the gateway has no leads. */
  lead_id?: string | null;
  /** What the reader may do here and on its waiting cards, as the door's rules decide it. */
  may: Schemas["RoomMay"];
}

export interface FeedbackItem {
  from: string;
  kind: "reaction" | "correction";
  emoji?: string;
  note?: string;
  reasons?: string[];
}

/** One line of a room (GET /v1/spaces/:id/messages), or one drawn from a live event. */
export interface Line {
  id: string;
  seq: number;
  kind: string;
  author_id: string;
  text: string | null;
  reply_to: string | null;
  ts: string;
  card?: Record<string, unknown>;
  /** The files the post carries, linked for this person (none once taken back). */
  attachments?: LinkedFile[];
  /** The harnesses the message is for, as Chips decided (live lines only). */
  addressed_to?: string[];
  edited: boolean;
  deleted: boolean;
  pinned: boolean;
  feedback: FeedbackItem[];
  /** The agents whose turns heard it while working (message.heard), in order. */
  heard_by?: string[];
  /** Held by the referee (ADR 0083): for nobody, and whom it was for. */
  held?: boolean;
  held_for?: string[];
  /** What the referee counted of it (an agent's words to agents). */
  exchange?: { count: number; stop?: number | null; allowance?: number | null; circle?: boolean | null };
  /** Said by a free agent while it was in no room, at this time (ADR 0071). */
  held_since?: string;
  /** A quiet line drawn from a referee or agent event: its words are said as it is drawn,
   * so the names in them are the directory's as it stands (ADR 0100). */
  drawn?: AnyEvent;
  /** What Chips did with the person's own words while a run was live. */
  receipt?: "queued" | "steered";
  /** Words sent and not yet acknowledged (the outbox). */
  pending?: boolean;
  failed?: string;
}

export interface Participant {
  participant_id: string;
  kind: string;
  name: string;
  role: string | null;
  owner_id: string | null;
  capabilities?: string[] | null;
  /** False for a person an owner or admin deactivated. */
  active?: boolean;
  /** An agent's harness (its id and name), state, Main flag and room (ADR 0070). */
  harness_id?: string;
  harness?: string | null;
  state?: "active" | "archived";
  main?: boolean;
  space_id?: string | null;
  /** How many of a free agent's words wait for the next room it joins (never the words). */
  held?: number;
  /** A harness's face (an agent's, its harness's): connected, disconnected, restarting, trouble. */
  status?: string;
  restart_asked_at?: string;
  /** An agent's own face (ADR 0153): one emoji, or a picture's attachment id with its URL. */
  face?: string | null;
  face_url?: string | null;
}

export interface Step {
  step_id: string;
  status: "started" | "done" | "failed";
  title: string | null;
  summary: string | null;
  started_seq: number;
}

export interface RunCard {
  kind: "approval" | "question";
  id: string;
  run_id: string;
  space_id: string;
  /** The harness whose run asked (an agent's harness, never the agent). */
  harness_id?: string | null;
  asked_seq: number;
  expires_at: string | null;
  card: Record<string, unknown>;
  answered_by: string | null;
  answer: unknown;
  answered_seq: number | null;
  /** Set when this browser learnt the answer came from somewhere else. */
  elsewhere?: boolean;
}

export interface Run {
  run_id: string;
  space_id: string;
  harness_id: string;
  /** The agent whose turn it is, when an agent's (docs/adr/0075); null for the harness itself. */
  agent_id?: string | null;
  goal: string;
  state: string;
  status: { phase: string | null; verb: string | null; progress: number | null; text: string | null };
  summary: string | null;
  why: string | null;
  started_seq: number;
  steps?: Step[];
  cards?: RunCard[];
  usage?: { tokens_in: number; tokens_out: number; cost_usd: number };
}

// --- checked against the gateway's answers ------------------------------------------------

/** True when every answer the gateway sends as ``Sent`` reads as the app's ``Read``. */
type Fits<Sent, Read> = [Sent] extends [Read] ? true : false;
type Answered<T extends keyof Schemas> = Schemas[T];

export const contractChecks: {
  spaces: Fits<Answered<"SpaceList">, SpaceList>;
  space: Fits<Answered<"SpaceRow">, SpaceRow>;
  sheet: Fits<Answered<"Sheet">, Sheet>;
  member: Fits<Answered<"SheetMember">, Member>;
  line: Fits<Answered<"Line">, Line>;
  feedback: Fits<Answered<"FeedbackItem">, FeedbackItem>;
  participant: Fits<Answered<"Participant">, Participant>;
  step: Fits<Answered<"Step">, Step>;
  card: Fits<Answered<"RunCard">, RunCard>;
  run: Fits<Answered<"Run">, Run>;
} = {
  spaces: true,
  space: true,
  sheet: true,
  member: true,
  line: true,
  feedback: true,
  participant: true,
  step: true,
  card: true,
  run: true,
};
