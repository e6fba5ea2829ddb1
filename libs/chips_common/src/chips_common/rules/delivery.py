"""Per-recipient shaping of a logged event (websocket.md, What a harness hears).

A pure function of the event and the recipient, so a replay and a live delivery give
the same frame.
"""

from __future__ import annotations

from typing import Any, Literal

RecipientKind = Literal["person", "harness"]


def shape_for(
    event: dict[str, Any], recipient_id: str, recipient_kind: RecipientKind
) -> dict[str, Any]:
    """The event as this recipient is sent it.

    A harness hears somebody else's ``message.post`` as ``message.new``; its own post
    comes back as it was sent, which is how it knows the message landed. A person's
    session hears every message as posted.
    """
    if (
        recipient_kind == "harness"
        and event.get("type") == "message.post"
        and (event.get("actor") or {}).get("id") != recipient_id
    ):
        return {**event, "type": "message.new"}
    return event
