"""Turning logged events into context lines (docs/product/websocket.md, What you're told).

A line is ``said`` (a message, with who said it and whom it was for), ``joined`` or
``left`` (a membership change), ``renamed`` (the room's new title), or ``archived`` /
``unarchived``. Runs, steps, approvals, reactions and pins are not lines, nor are the cards
that report a run (status, approval, receipt); a card with words of its own (a task's goal,
a question's prompt, a summary's outcome…) is said as those words.

A said line reads as the message read when the context was asked for: an edit logged
before that reads edited, and a message taken back before that is gone. Both are worked
out from the log relative to the message, so every delivery of it hands over the same. A
voice note's words, once Chips heard them (``attachment.transcribed``), are the line's
``transcript`` the same way (docs/adr/0137).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any

from chips_common.events.messages import words_of
from chips_common.events.wire import LineJson

Who = Callable[[str], Mapping[str, str]]
# Kinds of message that are not lines: they report a run rather than say something.
NOT_SAID = frozenset({"status", "approval", "receipt"})
# A message's words as changed after it was posted: the newest edit, or None once taken back;
# and under ``heard:<message id>``, what was heard in its voice notes.
Changes = MutableMapping[str, str | None]
HEARD = "heard:"


def line_of(event: Mapping[str, Any], who: Who) -> LineJson | None:
    """The context line an event makes, or None for events that make none."""
    kind = event.get("type")
    actor_id = (event.get("actor") or {}).get("id", "")
    seq, at = event["seq"], event["ts"]
    if kind == "message.post":
        if event.get("kind", "text") in NOT_SAID:
            return None
        line: LineJson = {
            "seq": seq,
            "at": at,
            "kind": "said",
            "from": dict(who(actor_id)),
            "message_id": event.get("message_id"),
            "text": words_of(dict(event)),
        }
        if "addressed_to" in event:
            line["addressed_to"] = list(event["addressed_to"])
        if event.get("attachments"):  # docs/product/websocket.md: a said line names its files
            line["files"] = [a["name"] for a in event["attachments"]]
        return line
    if kind in ("membership.added", "membership.removed"):
        return {
            "seq": seq,
            "at": at,
            "kind": "joined" if kind == "membership.added" else "left",
            "from": dict(who(event["participant_id"])),
        }
    if kind == "space.updated":
        if event.get("title") is not None:
            return {
                "seq": seq,
                "at": at,
                "kind": "renamed",
                "from": dict(who(actor_id)),
                "title": event["title"],
            }
        if event.get("state") in ("closed", "open"):
            state = "archived" if event["state"] == "closed" else "unarchived"
            return {"seq": seq, "at": at, "kind": state, "from": dict(who(actor_id))}
    return None


# A key of ``changes`` naming who took a participant's place in the room (membership.replaced).
TAKEN_BY = "taken_by:"


def note_change(event: Mapping[str, Any], changes: Changes) -> None:
    """Fold an edit, a take-back or an attach into ``changes``, reading the log newest
    first. An agent attached in another's place (``membership.replaced``) is the author of
    what that one said in the room before it (docs/product/websocket.md, Agents: "what that
    one said in the room reads as the agent's from then on")."""
    kind = event.get("type")
    if kind == "message.deleted":
        changes[event["message_id"]] = None
    elif kind == "message.edited":
        changes.setdefault(event["message_id"], event["text"])
    elif kind == "membership.replaced":
        changes.setdefault(TAKEN_BY + event["replaced"], event["participant_id"])
    elif kind == "attachment.transcribed" and event.get("transcript"):
        key = HEARD + str(event["message_id"])
        later = changes.get(key)  # read newest first: an older note's words go before
        changes[key] = event["transcript"] + (f"\n{later}" if later else "")


def author_now(author_id: str, changes: Mapping[str, str | None]) -> str:
    """Who a line said by ``author_id`` reads as, after the attaches in ``changes``: the
    agent that took its place, or the one that took that one's, and so on."""
    seen = {author_id}
    while (taker := changes.get(TAKEN_BY + author_id)) is not None and taker not in seen:
        seen.add(taker)
        author_id = taker
    return author_id


def reauthored(line: LineJson, changes: Mapping[str, str | None], who: Who) -> LineJson:
    """A said line by who was later replaced in the room, as the agent that replaced it."""
    if line["kind"] != "said":
        return line
    said_by = (line.get("from") or {}).get("id", "")
    now = author_now(said_by, changes)
    return line if now == said_by else {**line, "from": dict(who(now))}


def revised(line: LineJson, changes: Mapping[str, str | None]) -> LineJson | None:
    """A said line as its message reads after ``changes``: edited, or gone; with what was
    heard in its voice notes."""
    if line["kind"] != "said":
        return line
    heard = changes.get(HEARD + str(line.get("message_id")))
    if heard:
        line = {**line, "transcript": heard}
    message_id = line.get("message_id")
    if message_id is None or message_id not in changes:
        return line
    text = changes[message_id]
    return None if text is None else {**line, "text": text, "edited": True}


def lines_of(
    events: Iterable[Mapping[str, Any]], who: Who, changes: Changes | None = None
) -> list[LineJson]:
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
            lines.append(reauthored(line, changes, who))
    return lines
