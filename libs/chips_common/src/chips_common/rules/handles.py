"""Handles and mentions (docs/product/messages.md, Message; docs/product/spaces.md, rule 1).

A handle is a participant's name without its spaces, or its first word, compared without
regard to case: ``Jacobian · mini`` is reached by ``@Jacobian·mini`` and ``@jacobian``.
A name too short to make a handle (one letter) has none. ``@all`` names every harness in
the room.

An agent (docs/adr/0070) is reached by its own name's handles, and by its harness's name's
when it is the only agent of that harness in the room.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

ALL = "all"
# What may follow an @ in a handle: letters, digits and the joiners names use.
MENTION = re.compile(r"(?<![\w@])@([\w][\w·.\-']*)", re.UNICODE)
MIN_HANDLE = 2
# The kinds of member that take turns: harnesses, and the agents harnesses speak as.
TAKERS = ("harness", "agent")


@dataclass(frozen=True)
class Member:
    """Somebody in a room, as the rules about words need them."""

    id: str
    kind: str  # person | harness | agent
    name: str
    # Their standing in the room (owner, member, guest), where the caller knows it.
    standing: str | None = None
    # An agent's harness: its id and its name (docs/adr/0070).
    harness_id: str | None = None
    harness: str | None = None


HANDLE_CHAR = re.compile(r"[\w·.\-']", re.UNICODE)
TRAILING = ".-'"


def _handle(words: str) -> str:
    """What of a name an @ can carry: its handle characters, without trailing punctuation.

    The same rule reads a mention, so every handle shown reaches its member.
    """
    return "".join(HANDLE_CHAR.findall(words)).rstrip(TRAILING)


def handles_of(name: str) -> set[str]:
    """Every handle (case-folded, without the @) that reaches a participant of this name."""
    words = name.split()
    candidates = [_handle("".join(words))] + ([_handle(words[0])] if words else [])
    return {c.casefold() for c in candidates if len(c) >= MIN_HANDLE}


def display_handle(name: str) -> str | None:
    """The handle a screen shows (``@ASCIIArt``), or None when no handle reaches the name."""
    whole = _handle("".join(name.split()))
    return f"@{whole}" if len(whole) >= MIN_HANDLE else None


def mentioned_handles(text: str) -> list[str]:
    """The handles written in a text, case-folded, in order, without repeats."""
    seen: dict[str, None] = {}
    for match in MENTION.finditer(text):
        seen.setdefault(match.group(1).rstrip(TRAILING).casefold(), None)
    return list(seen)


def reach(members: Sequence[Member]) -> list[tuple[Member, set[str]]]:
    """Each member with every handle that reaches it in this room.

    A harness's name is also a handle of its agent here when that agent is the only one of
    the harness's in the room (docs/product/websocket.md, Being spoken to).
    """
    agents_of: dict[str, int] = {}
    for member in members:
        if member.kind == "agent" and member.harness_id:
            agents_of[member.harness_id] = agents_of.get(member.harness_id, 0) + 1
    found = []
    for member in members:
        handles = handles_of(member.name)
        if (
            member.kind == "agent"
            and member.harness
            and agents_of.get(member.harness_id or "") == 1
        ):
            handles |= handles_of(member.harness)
        found.append((member, handles))
    return found


def resolve_mentions(text: str, members: Sequence[Member]) -> tuple[list[str], bool]:
    """The ids of the room's members the text @-mentions, and whether it said ``@all``.

    Ids come in the order the text names them; one handle may reach several members (two
    whose first word is the same), named in the room's order, and each is named once.
    """
    handles = mentioned_handles(text)
    said_all = ALL in handles
    ids: dict[str, None] = {}
    reached = reach(members) if any(h != ALL for h in handles) else []
    for handle in handles:
        if handle == ALL:
            continue
        for member, theirs in reached:
            if handle in theirs:
                ids.setdefault(member.id, None)
    return list(ids), said_all


def harnesses(members: Iterable[Member]) -> list[str]:
    """The members that take turns: harnesses, and agents (docs/adr/0070)."""
    return [m.id for m in members if m.kind in TAKERS]


def as_shown(members: Sequence[Member]) -> list[Member]:
    """Who is in the room as everybody is shown it (docs/adr/0070): a harness with any of
    its agents in the room is shown as those agents, and a harness row of standing
    ``agents`` (the door's, behind its agents) is never listed."""
    behind = {m.harness_id for m in members if m.kind == "agent" and m.harness_id}
    return [
        m
        for m in members
        if not (m.kind == "harness" and (m.standing == "agents" or m.id in behind))
    ]
