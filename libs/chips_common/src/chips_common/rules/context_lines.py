"""Turning logged events into context lines (spec/websocket.md, What you're told).

A line is ``said`` (a message, with who said it and whom it was for), ``joined`` or
``left`` (a membership change), ``renamed`` (the room's new title), or ``archived`` /
``unarchived``. Runs, steps, approvals, reactions and pins are not lines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Who = Callable[[str], Mapping[str, Any]]


def line_of(event: Mapping[str, Any], who: Who) -> dict[str, Any] | None:
    """The context line an event makes, or None for events that make none."""
    kind = event.get("type")
    actor_id = (event.get("actor") or {}).get("id", "")
    base = {"seq": event["seq"], "at": event["ts"]}
    if kind == "message.post":
        line = {
            **base,
            "kind": "said",
            "from": dict(who(actor_id)),
            "message_id": event.get("message_id"),
            "text": event.get("text", ""),
        }
        if "addressed_to" in event:
            line["addressed_to"] = list(event["addressed_to"])
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
