"""Words for a model: what a turn's ``context`` and ``room`` say, as text.

The product pages name these helpers (``renderContext``, ``renderRoomNote``, ``noteWithoutRules``);
here they are :func:`render_context`, :func:`render_room_note` and
:func:`note_without_rules`. They are pure functions of what a ``message.new`` carries, so
every harness tells its model the same thing Chips would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

CONTEXT_HEADING = "Said in this space since you last spoke:"

# The room's rules, as Chips words them (the gateway's rules.room; a test keeps them equal).
RULE_READ = "Everyone here reads what you write."
RULE_ACT = (
    "Everyone here reads what you write; only those you @-mention act on it. To hand work "
    "to an agent or ask it something, @-mention it."
)
RULE_PASS = (
    "If a message asks nothing of you now, as when it names a step that is yours later, "
    "answer NO_REPLY and nothing else: the space shows nothing, and nobody needs to hear "
    "that you are ready or waiting."
)


def render_line(line: Mapping[str, Any]) -> str:
    """One context line as ``Name: words`` (or ``Name joined``, ``Name renamed the room…``)."""
    who = (line.get("from") or {}).get("name") or "Chips"
    kind = line.get("kind")
    if kind == "said":
        words = line.get("text") or ""
        said = f"{who}: {words}" + (" (edited)" if line.get("edited") else "")
        if line.get("transcript"):
            # A machine heard a voice note: its words, and that a name or a number may be off.
            said = f"{said.rstrip()} [voice note, as heard: “{line['transcript']}”]"
        return said
    if kind == "renamed":
        return f"{who} renamed the room to “{line.get('title', '')}”"
    if kind in ("joined", "left", "archived", "unarchived"):
        return f"{who} {kind}" + (" the room" if kind in ("archived", "unarchived") else "")
    return f"{who}: {line.get('text') or kind or ''}"


def render_context(context: Mapping[str, Any] | None, *, heading: str = CONTEXT_HEADING) -> str:
    """The lines to put ahead of a turn's words, then the room's files.

    ``Said in this space since you last spoke:`` and one ``Name: words`` per line, oldest
    first; a note when older lines were left out to fit the budget; then the current
    version of each file in the room with its URL. Empty when there is nothing to say.
    """
    if not context:
        return ""
    lines: Sequence[Mapping[str, Any]] = context.get("lines") or []
    out: list[str] = []
    if lines:
        out.append(heading)
        if context.get("truncated"):
            out.append(
                f"(Only the newest {len(lines)} lines of what was said here since your last "
                "turn come with this one: older lines were left out.)"
            )
        out.extend(render_line(line) for line in lines)
    files: Sequence[Mapping[str, Any]] = context.get("files") or []
    if files:
        out.append("Files in this space:")
        for f in files:
            version = f" (v{f['version']})" if f.get("version") else ""
            url = f": {f['url']}" if f.get("url") else ""
            out.append(f"- {f.get('name', '?')}{version}{url}")
    return "\n".join(out)


def _describe(member: Mapping[str, Any], *, you: bool) -> str:
    kind = "person" if member.get("kind") == "person" else "agent"
    handle = member.get("handle")
    said = f"{member['name']} ({kind}, {handle})" if handle else f"{member['name']} ({kind})"
    return f"you, {said}" if you else said


def rules_for(taker_id: str, members: Sequence[Mapping[str, Any]]) -> str:
    """How the room works for this taker: shorter when no other agent is here."""
    others = [m for m in members if m.get("kind") != "person" and m["participant_id"] != taker_id]
    if not others:
        return RULE_READ
    return f"{RULE_ACT} {RULE_PASS}"


def render_room_note(room: Mapping[str, Any] | None, taker_id: str) -> str:
    """The note for the agent taking the turn: what is news to it, who is here, then the
    room's rules.

    Chips words it and sends it in ``room.notes``; this returns that note, or writes it
    again from ``room.members`` when the room carries none for ``taker_id`` (a harness
    running the turn as one of several agents, or a room read over HTTP). A note written
    again says who is here and the rules; the news is only in the note Chips sent.
    """
    if not room:
        return ""
    notes = room.get("notes") or {}
    if taker_id in notes:
        return str(notes[taker_id])
    members: Sequence[Mapping[str, Any]] = room.get("members") or []
    others = [_describe(m, you=False) for m in members if m["participant_id"] != taker_id]
    taker = next((m for m in members if m["participant_id"] == taker_id), None)
    names = [*others, _describe(taker, you=True)] if taker else others
    if len(names) > 2:
        listed = ", ".join(names[:-1]) + ", and " + names[-1]
    elif names:
        listed = " and ".join(names)
    else:
        listed = "nobody else"
    lead = next((m for m in members if m.get("lead")), None)
    led = ""
    if lead is not None and lead["participant_id"] == taker_id:
        led = (
            " You lead here: you hand out the work, and what is nobody's turn goes to you. "
            "A step one agent has handed to another needs no word from you until it comes "
            "back to you."
        )
    elif lead is not None:
        led = (
            f" {lead['name']} leads here: it hands out the work, and what is nobody's turn "
            "goes to it."
        )
    return f"In this space: {listed}.{led} {rules_for(taker_id, members)}"


def note_without_rules(room: Mapping[str, Any] | None, taker_id: str) -> str:
    """The note without the rules it ends with.

    A harness whose session keeps its earlier turns says the rules once, and from then on
    only the rest of the note, saying the rules again when they change (compare
    ``room["rules"][taker_id]`` with the last you said) or when the session compacts.
    """
    note = render_room_note(room, taker_id)
    rules = ((room or {}).get("rules") or {}).get(taker_id)
    if rules is None:
        rules = rules_for(taker_id, (room or {}).get("members") or [])
    if rules and note.endswith(rules):
        return note[: -len(rules)].rstrip()
    return note
