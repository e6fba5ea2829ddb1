// Words for a model: what a turn's `context` and `room` say, as text.
//
// The same functions as the Python SDK's chips_sdk.render (render_context,
// render_room_note, note_without_rules), written again for Node harnesses. They are pure
// functions of what a message.new carries, and give the same text byte for byte: the
// shared fixtures in docs/protocol/render-fixtures.json hold both to it.

/** A line of a turn's context, as message.new carries it. */
export interface ContextLine {
  kind?: string | null;
  from?: { name?: string | null } | null;
  text?: string | null;
  title?: string | null;
  edited?: boolean | null;
  transcript?: string | null;
  [field: string]: unknown;
}

/** A file of the room, as a turn's context lists it. */
export interface ContextFile {
  name?: string | null;
  version?: number | null;
  url?: string | null;
  [field: string]: unknown;
}

/** A turn's context: what was said since the agent last spoke, and the room's files. */
export interface TurnContext {
  lines?: ContextLine[] | null;
  truncated?: boolean | null;
  files?: ContextFile[] | null;
  [field: string]: unknown;
}

/** A room's member, as a turn's room lists it. */
export interface RoomMember {
  participant_id: string;
  name: string;
  kind?: string | null;
  handle?: string | null;
  lead?: boolean | null;
  [field: string]: unknown;
}

/** A turn's room: who is in it, and the note and rules Chips wrote for each taker. */
export interface TurnRoom {
  members?: RoomMember[] | null;
  notes?: Record<string, string> | null;
  rules?: Record<string, string> | null;
  [field: string]: unknown;
}

export const CONTEXT_HEADING = "Said in this space since you last spoke:";

// The room's rules, as Chips words them.
export const RULE_READ = "Everyone here reads what you write.";
export const RULE_ACT =
  "Everyone here reads what you write; only those you @-mention act on it. To hand work " +
  "to an agent or ask it something, @-mention it.";
export const RULE_PASS =
  "If a message asks nothing of you now, as when it names a step that is yours later, " +
  "answer NO_REPLY and nothing else: the space shows nothing, and nobody needs to hear " +
  "that you are ready or waiting.";

/** A value as it reads in a sentence (an empty or missing one reads as nothing). */
const said = (value: unknown): string => (value ? String(value) : "");

/** One context line as `Name: words` (or `Name joined`, `Name renamed the room…`). */
export function renderLine(line: ContextLine): string {
  const who = said(line.from?.name) || "Chips";
  const kind = line.kind;
  if (kind === "said") {
    const words = said(line.text);
    let out = `${who}: ${words}` + (line.edited ? " (edited)" : "");
    if (line.transcript) {
      // A machine heard a voice note: its words, and that a name or a number may be off.
      out = `${out.trimEnd()} [voice note, as heard: “${line.transcript}”]`;
    }
    return out;
  }
  if (kind === "renamed") return `${who} renamed the room to “${line.title ?? ""}”`;
  if (kind === "joined" || kind === "left" || kind === "archived" || kind === "unarchived") {
    return `${who} ${kind}` + (kind === "archived" || kind === "unarchived" ? " the room" : "");
  }
  return `${who}: ${said(line.text) || said(kind)}`;
}

/**
 * The lines to put ahead of a turn's words, then the room's files: the heading and one
 * `Name: words` per line, oldest first; a note when older lines were left out to fit the
 * budget; then the current version of each file with its URL. Empty when there is
 * nothing to say.
 */
export function renderContext(
  context: TurnContext | null | undefined,
  heading: string = CONTEXT_HEADING,
): string {
  if (!context || Object.keys(context).length === 0) return "";
  const lines = context.lines ?? [];
  const out: string[] = [];
  if (lines.length) {
    out.push(heading);
    if (context.truncated) {
      out.push(
        `(Only the newest ${lines.length} lines of what was said here since your last ` +
          "turn come with this one: older lines were left out.)",
      );
    }
    out.push(...lines.map(renderLine));
  }
  const files = context.files ?? [];
  if (files.length) {
    out.push("Files in this space:");
    for (const f of files) {
      const version = f.version ? ` (v${f.version})` : "";
      const url = f.url ? `: ${f.url}` : "";
      out.push(`- ${"name" in f ? String(f.name) : "?"}${version}${url}`);
    }
  }
  return out.join("\n");
}

function describe(member: RoomMember, you: boolean): string {
  const kind = member.kind === "person" ? "person" : "agent";
  const text = member.handle
    ? `${member.name} (${kind}, ${member.handle})`
    : `${member.name} (${kind})`;
  return you ? `you, ${text}` : text;
}

/** How the room works for this taker: shorter when no other agent is here. */
export function rulesFor(takerId: string, members: RoomMember[]): string {
  const others = members.filter((m) => m.kind !== "person" && m.participant_id !== takerId);
  return others.length ? `${RULE_ACT} ${RULE_PASS}` : RULE_READ;
}

/**
 * The note for the agent taking the turn: what is news to it, who is here, then the
 * room's rules. Chips words it and sends it in `room.notes`; this returns that note, or
 * writes it again from `room.members` when the room carries none for the taker. A note
 * written again says who is here and the rules; the news is only in the note Chips sent.
 */
export function renderRoomNote(room: TurnRoom | null | undefined, takerId: string): string {
  if (!room || Object.keys(room).length === 0) return "";
  const notes = room.notes ?? {};
  if (Object.prototype.hasOwnProperty.call(notes, takerId)) return String(notes[takerId]);
  const members = room.members ?? [];
  const others = members.filter((m) => m.participant_id !== takerId).map((m) => describe(m, false));
  const taker = members.find((m) => m.participant_id === takerId);
  const names = taker ? [...others, describe(taker, true)] : others;
  let listed: string;
  if (names.length > 2) listed = names.slice(0, -1).join(", ") + ", and " + names[names.length - 1];
  else if (names.length) listed = names.join(" and ");
  else listed = "nobody else";
  const lead = members.find((m) => m.lead);
  let led = "";
  if (lead !== undefined && lead.participant_id === takerId) {
    led =
      " You lead here: you hand out the work, and what is nobody's turn goes to you. " +
      "A step one agent has handed to another needs no word from you until it comes " +
      "back to you.";
  } else if (lead !== undefined) {
    led = ` ${lead.name} leads here: it hands out the work, and what is nobody's turn goes to it.`;
  }
  return `In this space: ${listed}.${led} ${rulesFor(takerId, members)}`;
}

/**
 * The note without the rules it ends with: a harness whose session keeps its earlier
 * turns says the rules once, then only the rest of the note, saying the rules again when
 * they change (compare `room.rules[takerId]` with the last you said) or when the session
 * compacts.
 */
export function noteWithoutRules(room: TurnRoom | null | undefined, takerId: string): string {
  const note = renderRoomNote(room, takerId);
  let rules: string | undefined = room?.rules?.[takerId];
  if (rules === undefined || rules === null) rules = rulesFor(takerId, room?.members ?? []);
  if (rules && note.endsWith(rules)) return note.slice(0, -rules.length).trimEnd();
  return note;
}
