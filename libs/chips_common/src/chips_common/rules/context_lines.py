"""Turning logged events into context lines (spec/websocket.md, What you're told).

A line is ``said`` (a message, with who said it and whom it was for), ``joined`` or
``left`` (a membership change), ``renamed`` (the room's new title), or ``archived`` /
``unarchived``. Runs, steps, approvals, reactions and pins are not lines, nor are the cards
that report a run (status, approval, receipt); a card with words of its own (a task's goal,
a question's prompt, a summary's outcome…) is said as those words.

A said line reads as the message read when the context was asked for: an edit logged
before that reads edited, and a message taken back before that is gone. Both are worked
out from the log relative to the message, so every delivery of it hands over the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any

from chips_common.events.messages import words_of

Who = Callable[[str], Mapping[str, Any]]
# Kinds of message that are not lines: they report a run rather than say something.
NOT_SAID = frozenset({"status", "approval", "receipt"})
# A message's words as changed after it was posted: the newest edit, or None once taken back.
Changes = MutableMapping[str, str | None]


def line_of(event: Mapping[str, Any], who: Who) -> dict[str, Any] | None:
    """The context line an event makes, or None for events that make none."""
    kind = event.get("type")
    actor_id = (event.get("actor") or {}).get("id", "")
    base = {"seq": event["seq"], "at": event["ts"]}
    if kind == "message.post":
        if event.get("kind", "text") in NOT_SAID:
            return None
        line = {
            **base,
            "kind": "said",
            "from": dict(who(actor_id)),
            "message_id": event.get("message_id"),
            "text": words_of(dict(event)),
        }
        if "addressed_to" in event:
            line["addressed_to"] = list(event["addressed_to"])
        if event.get("attachments"):  # websocket.md: a said line names its files
            line["files"] = [a["name"] for a in event["attachments"]]
        return line
    if kind in ("membership.added", "membership.removed"):
        return {
            **base,
            "kind": "joined" if kind == "membership.added" else "left",
            "from": dict(who(event["participant_id"])),
        }
    if kind == "space.updated":
        if event.get("title") is not None:
            return {**base, "kind": "renamed", "from": dict(who(actor_id)), "title": event["title"]}
        if event.get("state") in ("closed", "open"):
            state = "archived" if event["state"] == "closed" else "unarchived"
            return {**base, "kind": state, "from": dict(who(actor_id))}
    return None


def note_change(event: Mapping[str, Any], changes: Changes) -> None:
    """Fold an edit or a take-back into ``changes``, reading the log newest first."""
    kind = event.get("type")
    if kind == "message.deleted":
        changes[event["message_id"]] = None
    elif kind == "message.edited":
        changes.setdefault(event["message_id"], event["text"])


def revised(line: dict[str, Any], changes: Mapping[str, str | None]) -> dict[str, Any] | None:
    """A said line as its message reads after ``changes``: edited, or gone."""
    if line["kind"] != "said" or line.get("message_id") not in changes:
        return line
    text = changes[line["message_id"]]
    return None if text is None else {**line, "text": text, "edited": True}


def lines_of(
    events: Iterable[Mapping[str, Any]], who: Who, changes: Changes | None = None
) -> list[dict[str, Any]]:
    """The lines a run of a room's events makes, oldest first, as they read at its end.

    ``changes`` carries edits and take-backs seen in newer events (a caller reading a room
    backwards in chunks passes the same mapping for each chunk, newest chunk first).
    """
    ordered = list(events)
    changes = {} if changes is None else changes
    for event in reversed(ordered):
        note_change(event, changes)
    lines = []
    for event in ordered:
        line = line_of(event, who)
        if line is not None and (line := revised(line, changes)) is not None:
            lines.append(line)
    return lines
