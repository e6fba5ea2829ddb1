"""Per-recipient shaping of a logged event (websocket.md, What a harness hears).

Pure functions of the event and the recipient, so a replay and a live delivery give the
same frame. Context and room, which need the log, are added by the gateway around them.
"""

from __future__ import annotations

from typing import Any, Literal

RecipientKind = Literal["person", "harness"]


def is_for(event: dict[str, Any], recipient_id: str) -> bool:
    """Whether a message is a turn for this harness.

    A message logged before Chips said who messages are for has no ``addressed_to`` and
    was for every harness in its room.
    """
    addressed = event.get("addressed_to")
    return addressed is None or recipient_id in addressed


def shape_for(
    event: dict[str, Any], recipient_id: str, recipient_kind: RecipientKind
) -> dict[str, Any]:
    """The event as this recipient is sent it.

    A harness hears somebody else's ``message.post`` as ``message.new`` when the message is
    for it and as ``message.overheard`` (the same payload: answer nothing) when it is not;
    its own post comes back as it was sent, which is how it knows the message landed. A
    person's session hears every message as posted.
    """
    if (
        recipient_kind == "harness"
        and event.get("type") == "message.post"
        and (event.get("actor") or {}).get("id") != recipient_id
    ):
        kind = "message.new" if is_for(event, recipient_id) else "message.overheard"
        return {**event, "type": kind}
    return event
