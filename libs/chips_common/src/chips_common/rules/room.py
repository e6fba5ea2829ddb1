"""Who is in the room, and the note Chips words for each harness taking a turn.

spec/websocket.md, Who is in the room: members with the handle that reaches each, people
first and then harnesses, each group by name; a note per taker, which ends with the
room's rules. Chips words the note itself so that every harness tells its model the same
thing; the sentences here are Chips's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chips_common.rules.handles import Member, display_handle

RULE_READ = "Everyone in this room can read what you write."
RULE_ACT = (
    "Only the agents you @-mention will act on it, so @-mention an agent to hand it work "
    "or to ask it something."
)
RULE_PASS = (
    "When a message needs nothing from you right now (for instance it names a step that "
    "comes to you later), reply with NO_REPLY alone: the room shows nothing, and nobody "
    "needs to be told that you are ready or waiting."
)


def ordered(members: Sequence[Member]) -> list[Member]:
    """People first, then harnesses, each by name (case aside)."""
    return sorted(members, key=lambda m: (m.kind != "person", m.name.casefold(), m.id))


def room_members(members: Sequence[Member]) -> list[dict[str, Any]]:
    out = []
    for member in ordered(members):
        entry: dict[str, Any] = {
            "participant_id": member.id,
            "kind": member.kind,
            "name": member.name,
        }
        handle = display_handle(member.name)
        if handle:
            entry["handle"] = handle
        out.append(entry)
    return out


def rules_for(taker_id: str, members: Sequence[Member]) -> str:
    """How the room works for this taker: shorter when no other harness is here."""
    others = [m for m in members if m.kind != "person" and m.id != taker_id]
    if not others:
        return RULE_READ
    return f"{RULE_READ} {RULE_ACT} {RULE_PASS}"


def describe(member: Member, *, you: bool) -> str:
    kind = "person" if member.kind == "person" else "agent"
    handle = display_handle(member.name)
    said = f"{member.name} ({kind}, {handle})" if handle else f"{member.name} ({kind})"
    return f"you, {said}" if you else said


def note_for(taker_id: str, members: Sequence[Member]) -> str:
    """The note for one taker: who is here (the taker named as you, last), then the rules."""
    others = [describe(m, you=False) for m in ordered(members) if m.id != taker_id]
    taker = next((m for m in members if m.id == taker_id), None)
    names = [*others, describe(taker, you=True)] if taker else others
    if len(names) > 1:
        listed = (
            ", ".join(names[:-1]) + ", and " + names[-1] if len(names) > 2 else " and ".join(names)
        )
    else:
        listed = names[0] if names else "nobody else"
    return f"Here in this room: {listed}. {rules_for(taker_id, members)}"


def room_for(takers: Sequence[str], members: Sequence[Member]) -> dict[str, Any]:
    """The ``room`` a message.new carries for the harnesses taking the turn."""
    return {
        "members": room_members(members),
        "notes": {t: note_for(t, members) for t in takers},
        "rules": {t: rules_for(t, members) for t in takers},
    }
