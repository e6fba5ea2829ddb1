"""Messages said in a space (spec/messages.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from chips_common.events.base import EventBody, register
from chips_common.events.runs import Receipt

MAX_TEXT = 32_000


@register
class MessagePost(EventBody):
    """Words said in a space. The message's id is the event's ULID with ``msg_``.

    ``to`` is the composer's pick: harness ids, or ``"everyone"``. ``mentions`` is filled in
    by Chips from the text's @handles (a value the sender writes is replaced), and so is
    ``addressed_to``: the harnesses the message is for (spec/spaces.md, the five rules).
    """

    type: Literal["message.post"] = "message.post"
    space_id: str
    kind: Literal["text"] = "text"
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    reply_to: str | None = None
    to: list[str] | None = Field(default=None, max_length=50)
    mentions: list[str] | None = Field(default=None, max_length=200)
    # Filled in by Chips at append; what a client writes here is replaced.
    addressed_to: list[str] | None = Field(default=None, max_length=200)
    # Filled in by Chips when a run is live in the room (websocket.md, Receipts).
    receipt: Receipt | None = None
