// The app's state: who is signed in, the rooms list, the rooms opened, and the socket.
// Everything on screen is folded from the log: HTTP reads for where to start, then each
// event from the socket once, in seq order (live.ts).
import { answeredAsk, askOf, foldPause, foldWork, refereeWords, REFEREE_LINE_TYPES, type Ask, type JobSpend, type Pause, type Turn } from "./agents";
import { Api, ApiError, unsigned } from "./api";
import { deviceName, DeviceRefused, DeviceSession, forgetDevice, loadDevice, newKeys, saveDevice, savePending, takePending, type DeviceRecord, type OpenSession, type SignedIn } from "./device";
import { passkeySession, passkeyWords } from "./passkey";
import { asSentence } from "./people";
import type { Caps, LinkedFile, RoomFile, Uploaded } from "./files";
import { foldChange, insertLine, lineOf, LINE_TYPES, reauthor, threadName } from "./lines";
import { Live, LiveState, newKey, SeqGate } from "./live";
import { handlesOf } from "./markdown";
import type { AnyEvent, Line, Participant, Person, Run, RunCard, Sheet, SpaceRow } from "./protocol";
import { runnerOf } from "./runs";

const TOKEN_KEY = "chips.token";
const READ_KEY = "chips.read.";
const PAGE = 50;

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

/** Events that change who is who (the directory is read again after them). */
// What changes who may answer a room's cards: a card asked or answered, a run ended.
const CARD_TYPES = new Set(["approval.request", "question.ask", "approval.resolved", "question.answered", "question.expired", "run.completed", "run.failed", "run.cancel"]);
const DIRECTORY_TYPES = new Set(["participant.joined", "person.updated", "harness.declared", "agent.registered", "agent.updated", "agent.attached", "agent.released"]);
/** Events that change a room's job or its ceiling (its spend is read again after them). */
// What an answer records on its card, as the projector keeps it (rules.py, answer_of):
// the dial's rule and level too (ADR 0130), and what an expiry took (ADR 0131).
const ANSWER_FIELDS = ["decision", "edited", "note", "value", "values", "text", "rule", "autonomy", "default_taken"];
const SPEND_TYPES = new Set(["usage", "budget.warning", "exchange.set", "space.spend_ceiling_set"]);

export interface Toast {
  id: number;
  text: string;
  undo?: () => void;
}

type Listener = () => void;

/** The room the page shows (#/room/<id>, or #/room/<id>/at/<line>), or null. */
function openedRoom(): string | null {
  if (!location.hash.startsWith("#/room/")) return null;
  return decodeURIComponent(location.hash.slice("#/room/".length).split("/at/")[0] ?? "");
}

export class Store {
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
  /** The session a passkey's sign-in opened, for the device's first requests. */
  private firstSession: OpenSession | null = null;
  api: Api | null = null;
  live: Live | null = null;
  gate = new SeqGate();
  /** Keys of my writes, by the seq the ack gave (to know my own line when it arrives). */
  private keyBySeq = new Map<number, string>();
  private seqByKey = new Map<string, number>();
  private receipts = new Map<string, "queued" | "steered">();
  /** Local lines for words still in the outbox, by key. */
  sending = new Map<string, Line & { space_id: string }>();
  private waiters = new Map<string, { resolve: (seq: number | null) => void; reject: (e: Error) => void }>();
  private listeners = new Set<Listener>();
  private listTimer: ReturnType<typeof setTimeout> | null = null;
  private sheetReads = new Map<string, { seq: number }>();
  private listAfter = 0;
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

  // --- signing in ----------------------------------------------------------------------

  get signedIn(): boolean {
    return this.token !== null || this.device !== null;
  }

  /** Start as the device paired here, if there is one (else the token, if any). */
  async boot(): Promise<void> {
    if (!this.token) this.device = await loadDevice();
    this.booting = false;
    if (this.signedIn) this.start();
    else this.changed();
  }

  /**
   * Use an invite link (or a pairing code): this browser makes a key pair whose private
   * half it cannot export, is paired as the person's device, and keeps the pair here.
   */
  async acceptInvite(secret: string): Promise<void> {
    const { keys, publicKey } = await newKeys();
    const name = deviceName(navigator.userAgent);
    const paired = await unsigned<{ device_id: string; workspace_id: string; participant_id: string }>("/v1/invites/accept", {
      invite: secret,
      public_key: publicKey,
      device_name: name,
      kind: "browser",
    });
    const rec: DeviceRecord = { device_id: paired.device_id, workspace_id: paired.workspace_id, participant_id: paired.participant_id, name, keys };
    await saveDevice(rec);
    localStorage.removeItem(TOKEN_KEY);
    this.token = null;
    this.device = rec;
    this.signInError = null;
    this.start();
  }

  /** Sign in with the team's identity provider: this browser's key pair is made now and
   * kept as pending; the browser goes to the provider and comes back paired (docs/adr/0135). */
  async startProviderSignIn(): Promise<void> {
    const { keys, publicKey } = await newKeys();
    await savePending(keys);
    const started = await unsigned<{ url: string }>("/v1/oidc/start", { public_key: publicKey, device_name: deviceName(navigator.userAgent) });
    location.assign(started.url);
  }

  /** Back from the provider, paired: the pending key pair is this device's now. */
  async finishProviderSignIn(paired: SignedIn): Promise<void> {
    const keys = await takePending();
    if (!keys) {
      this.signInError = "This browser lost the key it made for the sign-in; sign in again.";
      this.changed();
      return;
    }
    const rec: DeviceRecord = { device_id: paired.device_id, workspace_id: paired.workspace_id, participant_id: paired.participant_id, name: deviceName(navigator.userAgent), keys };
    await saveDevice(rec);
    localStorage.removeItem(TOKEN_KEY);
    this.token = null;
    this.device = rec;
    this.signInError = null;
    this.booting = false;
    this.start();
  }

  /** Sign in with a passkey this browser holds (docs/adr/0145): its device is this one's,
   * and each later session is asked of it. */
  async signInWithPasskey(): Promise<void> {
    try {
      const s = await passkeySession();
      const rec: DeviceRecord = { device_id: s.device_id, workspace_id: s.workspace_id, participant_id: s.participant_id, name: "Passkey", passkey: s.credential_id };
      await saveDevice(rec);
      localStorage.removeItem(TOKEN_KEY);
      this.token = null;
      this.device = rec;
      this.firstSession = { token: s.token, expires_at: s.expires_at };
      this.signInError = null;
      this.start();
    } catch (err) {
      this.signInError = err instanceof ApiError ? asSentence(err.message) : passkeyWords(err);
      this.changed();
    }
  }

  providerRefused(message: string): void {
    this.signInError = asSentence(message);
    this.changed();
  }

  async signIn(token: string): Promise<void> {
    const api = new Api(token.trim());
    try {
      await api.ticket();
    } catch (err) {
      this.signInError =
        err instanceof ApiError && err.status === 401 ? "That token is not known, or was withdrawn." : `Chips did not answer: ${(err as Error).message}`;
      this.changed();
      return;
    }
    localStorage.setItem(TOKEN_KEY, token.trim());
    this.token = token.trim();
    this.signInError = null;
    this.start();
  }

  signOut(): void {
    this.live?.stop();
    localStorage.removeItem(TOKEN_KEY);
    if (this.device) void forgetDevice();
    this.token = null;
    this.device = null;
    this.me = null;
    this.live = null;
    this.api = null;
    this.spaces.clear();
    this.rooms.clear();
    this.gate = new SeqGate();
    for (const h of this.hooks.signOut) h();
    this.changed();
  }

  start(): void {
    if (!this.signedIn) return;
    const session = this.device ? new DeviceSession(this.device, this.firstSession, askPasskey) : null;
    this.firstSession = null;
    const api = new Api(session ? () => session.bearer() : this.token!);
    this.api = api;
    void this.detectFeatures();
    this.live = new Live({
      ticket: async () => (await api.ticket()).ticket,
      since: () => this.gate.last,
      onHello: async (person, workspaceId) => {
        this.me = person;
        this.workspaceId = workspaceId;
        if (this.gate.last === null) await this.loadFirst();
        this.watchDirectory();
        for (const h of this.hooks.hello) h();
      },
      onNotification: (frame) => {
        for (const h of this.hooks.notification) h(frame);
      },
      onEvents: (events) => this.apply(events),
      onAck: (key, seq) => this.acked(key, seq),
      onError: (key, code, message) => this.refused(key, code, message),
      onReceipt: (key, disposition) => this.receipt(key, disposition),
      onState: (state) => {
        this.state = state;
        if (state === "signed-out") {
          this.signInError = this.device
            ? "This device was signed out: it was revoked, or its person was. Open a new invite link, or a pairing code from another of your devices."
            : "Your token was refused. Sign in again.";
          this.signOut();
        }
        this.changed();
      },
    });
    this.live.start();
    this.changed();
  }

  private async detectFeatures(): Promise<void> {
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

  async loadFiles(spaceId: string): Promise<void> {
    try {
      this.files.set(spaceId, (await this.api!.files(spaceId)).files);
    } catch (err) {
      this.toast((err as Error).message);
    }
    this.changed();
  }

  /** The first connection: the directory and the list, and the seq to resume after. */
  private async loadFirst(): Promise<void> {
    const api = this.api!;
    const [people, list] = await Promise.all([api.participants(), api.spaces()]);
    this.participants = new Map(people.participants.map((p) => [p.participant_id, p]));
    this.setList(list.spaces, list.archived_count);
    this.gate.last = list.as_of_seq;
    this.changed();
  }

  private setList(rows: SpaceRow[], archivedCount: number): void {
    this.spaces = new Map(rows.map((s) => [s.id, s]));
    this.archivedCount = archivedCount;
    for (const id of [...this.rooms.keys()]) {
      if (!this.spaces.has(id) && !this.archived?.some((a) => a.id === id)) this.rooms.delete(id);
    }
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
        this.setList(list.spaces, list.archived_count);
        if (this.archived !== null) this.archived = (await this.api!.spaces(after, true)).spaces;
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

  private directoryTimer: ReturnType<typeof setTimeout> | null = null;

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

  // --- names -------------------------------------------------------------------------

  nameOf = (id: string): string => {
    if (id === this.me?.id) return this.me.name;
    return this.participants.get(id)?.name ?? (id.startsWith("sys") ? "Chips" : "Someone");
  };

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

  // --- the socket's events -------------------------------------------------------------

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

  private foldRoom(room: Room, e: AnyEvent): void {
    if (e.seq <= room.asOf && e.type !== "message.post") return;
    const f = e as unknown as Record<string, unknown>;
    this.foldBeside(room, e);
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
    this.foldRun(room, e);
  }

  /**
   * What the room draws beside its lines (docs/adr/0100): the pause, a person's asks of a
   * harness and the agents that answered them, and the quiet lines of the referee's events.
   * The same for an event read back with a page of lines as for one live.
   */
  private foldBeside(room: Room, e: AnyEvent): void {
    room.work = foldWork(room.work, e);
    const pause = foldPause(room.pause, e);
    if (pause !== room.pause && !(pause && room.pause && pause.seq < room.pause.seq)) room.pause = pause;
    const ask = askOf(e);
    if (ask && !room.asks.has(ask.id)) room.asks = new Map(room.asks).set(ask.id, ask);
    const answered = answeredAsk(e);
    if (answered) {
      const asked = room.asks.get(answered.ask);
      if (asked && !asked.answered_by) room.asks = new Map(room.asks).set(asked.id, { ...asked, answered_by: answered.agent });
    }
    if (REFEREE_LINE_TYPES.has(e.type)) {
      const words = refereeWords(e, this.nameOf);
      const id = `note_${e.id}`;
      if (words && !room.lines.some((l) => l.id === id)) {
        room.lines = insertLine(room.lines, {
          id,
          seq: e.seq,
          kind: "system",
          author_id: e.actor.id,
          text: words,
          reply_to: null,
          ts: e.ts,
          edited: false,
          deleted: false,
          pinned: false,
          feedback: [],
          drawn: e,
        });
      }
    }
  }

  private spendTimers = new Map<string, ReturnType<typeof setTimeout>>();

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

  private foldRun(room: Room, e: AnyEvent): void {
    const f = e as unknown as Record<string, unknown>;
    const runId = f["run_id"] as string | undefined;
    // Who may answer the room's cards is the sheet's to say: read it again.
    if (CARD_TYPES.has(e.type)) this.sheetAfter(room.id, e.seq);
    if (e.type === "run.started" && runId) {
      room.runs.set(runId, {
        run_id: runId,
        space_id: room.id,
        ...runnerOf(e.actor),
        goal: String(f["goal"] ?? ""),
        state: "running",
        status: { phase: null, verb: null, progress: null, text: null },
        summary: null,
        why: null,
        started_seq: e.seq,
        steps: [],
        cards: [],
      });
      room.runs = new Map(room.runs);
      return;
    }
    if (e.type === "approval.request" || e.type === "question.ask") {
      const kind = e.type === "approval.request" ? "approval" : "question";
      const id = String(f[`${kind}_id`]);
      const { v: _v, workspace_id: _w, ...body } = f;
      room.cards.set(id, {
        kind,
        id,
        run_id: String(runId),
        space_id: room.id,
        harness_id: e.actor.harness_id ?? e.actor.id,
        asked_seq: e.seq,
        expires_at: (f["expires_at"] as string | null | undefined) ?? null,
        card: body,
        answered_by: null,
        answer: null,
        answered_seq: null,
      });
      room.cards = new Map(room.cards);
      return;
    }
    if (e.type === "approval.resolved" || e.type === "question.answered" || e.type === "question.expired") {
      const kind = e.type === "approval.resolved" ? "approval" : "question";
      const card = room.cards.get(String(f[`${kind}_id`]));
      if (card && card.answered_seq === null) {
        const answer: Record<string, unknown> = {};
        for (const k of ANSWER_FIELDS) if (f[k] != null) answer[k] = f[k];
        if (e.type === "question.expired") answer["expired"] = true;
        room.cards.set(card.id, {
          ...card,
          answered_by: e.actor.id,
          answer,
          answered_seq: e.seq,
          elsewhere: f["resolved_elsewhere"] === true || e.actor.id !== this.me?.id,
        });
        room.cards = new Map(room.cards);
      }
      return;
    }
    if (!runId) return;
    const run = room.runs.get(runId);
    if (!run) return;
    const next: Run = { ...run, status: { ...run.status }, steps: [...(run.steps ?? [])] };
    switch (e.type) {
      case "run.status":
        next.status = {
          phase: (f["phase"] as string | null) ?? null,
          verb: (f["verb"] as string | null) ?? null,
          progress: (f["progress"] as number | null) ?? null,
          text: (f["text"] as string | null) ?? null,
        };
        break;
      case "step.log": {
        const stepId = String(f["step_id"]);
        const old = next.steps!.find((s) => s.step_id === stepId);
        const step = {
          step_id: stepId,
          status: f["status"] as "started" | "done" | "failed",
          title: (f["title"] as string | null) ?? old?.title ?? null,
          summary: (f["summary"] as string | null) ?? old?.summary ?? null,
          started_seq: old?.started_seq ?? e.seq,
        };
        next.steps = old ? next.steps!.map((s) => (s.step_id === stepId ? step : s)) : [...next.steps!, step];
        break;
      }
      case "run.paused":
        next.state = "paused";
        break;
      case "run.resumed":
        next.state = "running";
        break;
      case "run.completed":
        next.state = "completed";
        next.summary = (f["summary"] as string | null) ?? null;
        break;
      case "run.failed":
        next.state = "failed";
        next.why = (f["why"] as string | null) ?? null;
        break;
      case "run.cancel":
        next.state = "cancelled";
        break;
      case "usage": {
        const u = next.usage ?? { tokens_in: 0, tokens_out: 0, cost_usd: 0 };
        next.usage = {
          tokens_in: u.tokens_in + Number(f["tokens_in"] ?? 0),
          tokens_out: u.tokens_out + Number(f["tokens_out"] ?? 0),
          cost_usd: u.cost_usd + Number(f["cost_usd"] ?? 0),
        };
        break;
      }
      default:
        return;
    }
    room.runs.set(runId, next);
    room.runs = new Map(room.runs);
  }

  // --- rooms -------------------------------------------------------------------------

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
      for (const e of page.events ?? []) this.foldBeside(room, e);
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
  private sheetAfter(spaceId: string, seq: number): void {
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
      for (const e of page.events ?? []) this.foldBeside(room, e);
      room.pause = pause;
      room.work = work;
    } finally {
      room.loadingOlder = false;
      this.changed();
    }
  }

  // --- writing -----------------------------------------------------------------------

  /** Send an event over the socket; resolves with its seq when acked, rejects if refused. */
  send(event: Record<string, unknown>): Promise<number | null> {
    const key = newKey();
    return new Promise((resolve, reject) => {
      this.waiters.set(key, { resolve, reject });
      this.live!.send({ ...event, idempotency_key: key });
    });
  }

  /**
   * Post words, files or both: drawn at once as sending, then as the logged line when it
   * comes back. `to` is the composer's pick (harness ids, or "everyone"), sent only when
   * the person made one (docs/product/spaces.md, Several harnesses and people in one space).
   */
  say(spaceId: string, text: string, replyTo: string | null, extra: { uploads?: Uploaded[]; to?: string[] } = {}): Promise<number | null> {
    const key = newKey();
    const event: Record<string, unknown> = { type: "message.post", space_id: spaceId, idempotency_key: key };
    if (text) event["text"] = text;
    if (replyTo) event["reply_to"] = replyTo;
    if (extra.uploads?.length) event["upload_ids"] = extra.uploads.map((u) => u.upload_id);
    if (extra.to?.length) event["to"] = extra.to;
    if (!text.trim().startsWith("/") && !/^wreply\b/i.test(text.trim())) {
      const attachments: LinkedFile[] = (extra.uploads ?? []).map((u) => ({
        attachment_id: u.upload_id,
        name: u.name,
        mime_type: u.mime_type,
        kind: u.kind,
        byte_size: u.byte_size,
        sha256: "",
        version: 0,
      }));
      this.sending.set(key, {
        id: `sending:${key}`,
        space_id: spaceId,
        seq: Number.MAX_SAFE_INTEGER,
        kind: "text",
        author_id: this.me?.id ?? "",
        text,
        reply_to: replyTo,
        ts: new Date().toISOString(),
        ...(attachments.length ? { attachments } : {}),
        edited: false,
        deleted: false,
        pinned: false,
        feedback: [],
        pending: true,
      });
    }
    this.changed();
    return new Promise((resolve, reject) => {
      this.waiters.set(key, { resolve, reject });
      this.live!.send(event);
    });
  }

  private acked(key: string, seq: number | null): void {
    if (seq !== null) {
      this.keyBySeq.set(seq, key);
      this.seqByKey.set(key, seq);
      if (this.gate.last !== null && seq <= this.gate.last) this.sending.delete(key);
    } else {
      this.sending.delete(key);
    }
    this.waiters.get(key)?.resolve(seq);
    this.waiters.delete(key);
    this.changed();
  }

  private refused(key: string | undefined, code: string, message: string): void {
    if (key) {
      const line = this.sending.get(key);
      if (line) this.sending.set(key, { ...line, pending: false, failed: message });
      const waiter = this.waiters.get(key);
      this.waiters.delete(key);
      if (waiter) waiter.reject(new ApiError(0, code, message));
      else this.toast(message);
    } else if (code !== "unauthorized" && code !== "too_far_behind") {
      this.toast(message);
    }
    this.changed();
  }

  private receipt(key: string, disposition: "queued" | "steered"): void {
    this.receipts.set(key, disposition);
    const seq = this.seqByKey.get(key);
    if (seq === undefined) return;
    for (const room of this.rooms.values()) {
      const line = room.lines.find((l) => l.seq === seq);
      if (line && !line.receipt) room.lines = room.lines.map((l) => (l === line ? { ...l, receipt: disposition } : l));
    }
    this.changed();
  }

  dismissFailed(key: string): void {
    this.sending.delete(key);
    this.changed();
  }

  toast(text: string, undo?: () => void): void {
    const toast: Toast = { id: ++this.toastId, text, ...(undo ? { undo } : {}) };
    this.toasts = [...this.toasts, toast];
    this.changed();
    setTimeout(() => {
      this.toasts = this.toasts.filter((t) => t.id !== toast.id);
      this.changed();
    }, 5000);
  }

  /** Open a room (or a thread) and wait for its id from the log. */
  async create(event: Record<string, unknown>): Promise<string> {
    const ack = await this.api!.post({ ...event, idempotency_key: newKey("open") });
    const seq = ack.seq!;
    const { events } = await this.api!.eventAt(seq);
    const created = events.find((e) => e.seq === seq);
    const id = created ? String((created as unknown as Record<string, unknown>)["space_id"]) : "";
    this.refreshList(seq);
    return id;
  }
}

export const store = new Store();

/** A passkey device's session, asked of its passkey; a refusal reads as a device's. */
async function askPasskey(credentialId: string): Promise<OpenSession> {
  try {
    return await passkeySession(credentialId);
  } catch (err) {
    const refused = err instanceof ApiError ? new DeviceRefused(err.code, err.message) : new DeviceRefused("unavailable", passkeyWords(err));
    (refused as unknown as { status: number }).status = err instanceof ApiError ? err.status : 0;
    throw refused;
  }
}
