"""Composer commands: a person's message that is a room operation (docs/product/spaces.md).

``/add @name``, ``/remove @name``, ``/title New title``, ``/archive``, ``/unarchive`` and
``/leave`` do from the composer what the room sheet does; ``/wrong <note>`` says a harness's
last message here is wrong (a correction, docs/product/messages.md, Feedback). The eventlog's
door reads them from a person's ``message.post`` and logs the operation instead of the words
(docs/adr/0008). Any other text, including ``//command`` (a harness command passed
through) and slash words that are not these, is an ordinary message.

Pure: parsing here; the door resolves handles against participants with the same handle
rule mentions use (``chips_common.rules.handles``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from chips_common.rules.handles import handles_of

COMMANDS = frozenset({"add", "remove", "title", "archive", "unarchive", "leave", "wrong"})
MAX_NOTE = 4_000
MAX_TITLE = 200
_HEAD = re.compile(r"^/([A-Za-z]+)(?:\s+(.*))?$", re.DOTALL)
_HANDLE = re.compile(r"^@([\w][\w·.\-']*)$", re.UNICODE)


class CommandError(ValueError):
    """A composer command written wrong; the message says how to write it."""


@dataclass(frozen=True)
class Command:
    """One composer command: its name, the handles it names, or the title it gives."""

    name: str
    handles: tuple[str, ...] = ()
    title: str | None = None
    note: str | None = None


def parse_command(text: str) -> Command | None:
    """The command ``text`` is, None when it is an ordinary message.

    Raises :class:`CommandError` for one of the commands written wrong, so that
    ``/title`` with no title is refused rather than posted as words.
    """
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    match = _HEAD.match(stripped)
    if match is None or match.group(1).lower() not in COMMANDS:
        return None
    name = match.group(1).lower()
    rest = (match.group(2) or "").strip()
    if name in ("add", "remove"):
        words = rest.split()
        handles = [m.group(1) for w in words if (m := _HANDLE.match(w))]
        if not words or len(handles) != len(words):
            raise CommandError(f"/{name} names people by their handle, like /{name} @maya")
        return Command(name, tuple(dict.fromkeys(h.rstrip(".-'").casefold() for h in handles)))
    if name == "title":
        if not rest:
            raise CommandError("/title needs the new title after it, like /title Launch plan")
        if len(rest) > MAX_TITLE:
            raise CommandError(f"a title is at most {MAX_TITLE} characters")
        return Command(name, title=rest)
    if name == "wrong":
        if not rest:
            raise CommandError("/wrong needs what is wrong after it, like /wrong the total is off")
        if len(rest) > MAX_NOTE:
            raise CommandError(f"a correction's note is at most {MAX_NOTE} characters")
        return Command(name, note=rest)
    if rest:
        raise CommandError(f"/{name} takes nothing after it")
    return Command(name)


def resolve_handle(handle: str, candidates: list[tuple[str, str]]) -> str:
    """The one participant ``(id, name)`` among ``candidates`` that ``handle`` reaches.

    Raises :class:`CommandError` when nobody or more than one is reached, naming them, so
    the person can write a longer handle.
    """
    reached = [(pid, name) for pid, name in candidates if handle in handles_of(name)]
    if not reached:
        raise CommandError(f"nobody here is called @{handle}")
    if len(reached) > 1:
        names = ", ".join(name for _, name in reached)
        raise CommandError(f"@{handle} could be {names}; write more of the name")
    return reached[0][0]
