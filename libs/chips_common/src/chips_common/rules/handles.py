"""Handles and mentions (spec/messages.md, Message; spec/spaces.md, rule 1).

A handle is a participant's name without its spaces, or its first word, compared without
regard to case: ``Jacobian · mini`` is reached by ``@Jacobian·mini`` and ``@jacobian``.
A name too short to make a handle (one letter) has none. ``@all`` names every harness in
the room.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

ALL = "all"
# What may follow an @ in a handle: letters, digits and the joiners names use.
MENTION = re.compile(r"(?<![\w@])@([\w][\w·.\-']*)", re.UNICODE)
MIN_HANDLE = 2


@dataclass(frozen=True)
class Member:
    """Somebody in a room, as the rules about words need them."""

    id: str
    kind: str  # person | harness
    name: str
    # Their standing in the room (owner, member, guest), where the caller knows it.
    standing: str | None = None


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


def resolve_mentions(text: str, members: Sequence[Member]) -> tuple[list[str], bool]:
    """The ids of the room's members the text @-mentions, and whether it said ``@all``.

    Ids come in the order the text names them; one handle may reach several members (two
    whose first word is the same), named in the room's order, and each is named once.
    """
    handles = mentioned_handles(text)
    said_all = ALL in handles
    ids: dict[str, None] = {}
    for handle in handles:
        if handle == ALL:
            continue
        for member in members:
            if handle in handles_of(member.name):
                ids.setdefault(member.id, None)
    return list(ids), said_all


def harnesses(members: Iterable[Member]) -> list[str]:
    return [m.id for m in members if m.kind == "harness"]
