"""The muted line a room shows for an operation on it (docs/product/spaces.md, Retitling and
archiving).

A room operation is one event; the line saying who did it is drawn from that event, not
logged beside it (docs/adr/0006-room-lines-are-drawn-from-the-event.md). This function is
the one place the words are chosen, so the read model, a screen and a harness's context
all say the same thing. It is pure: names come from the caller, as of the event's seq.
"""

from __future__ import annotations

from collections.abc import Callable

from chips_common.events.wire import EventJson

# Events that draw a line in their room.
LINE_TYPES = frozenset(
    {
        "membership.added",
        "membership.removed",
        "space.updated",
        "space.lock_set",
        "space.lead_set",
        "lead.handed",
    }
)


def system_line(event: EventJson, name_of: Callable[[str], str]) -> str | None:
    """The words of the muted line ``event`` draws in its room, or None if it draws none."""
    kind = event.get("type")
    if kind not in LINE_TYPES:
        return None
    actor = event.get("actor") or {}
    who = "Chips" if actor.get("kind") in ("system", "operator") else name_of(actor.get("id", ""))
    if kind in ("membership.added", "membership.removed") and event.get("standing") == "agents":
        return None  # a harness in or out only behind its agents draws no line (ADR 0070)
    if kind == "membership.added":
        if event["participant_id"] == actor.get("id"):
            return f"{who} joined"
        return f"{who} added {name_of(event['participant_id'])}"
    if kind == "membership.removed":
        if event["participant_id"] == actor.get("id"):
            return f"{who} left"
        return f"{who} removed {name_of(event['participant_id'])}"
    if kind == "lead.handed":
        # One quiet line under the words (docs/product/websocket.md, Who leads; docs/adr/0090).
        return f"{name_of(event['agent_id'])} took it as the lead: it was nobody’s turn"
    if kind == "space.lead_set":
        lead = event.get("agent_id")
        if lead is None:
            return f"{who} left the room without a lead"
        return f"{who} made {name_of(lead)} the room’s lead"
    if kind == "space.lock_set":
        return f"{who} {'locked' if event['locked'] else 'unlocked'} the room's changes"
    title, state = event.get("title"), event.get("state")
    moved = {"closed": "archived", "open": "unarchived"}.get(state or "")
    if title is not None and moved:
        return f"{who} renamed the room to “{title}” and {moved} it"
    if title is not None:
        return f"{who} renamed the room to “{title}”"
    return f"{who} {moved} the room"
