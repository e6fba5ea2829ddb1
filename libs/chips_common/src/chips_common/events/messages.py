"""Messages said in a space (spec/messages.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from chips_common.events.base import EventBody, register

MAX_TEXT = 32_000


@register
class MessagePost(EventBody):
    """Words said in a space. The message's id is the event's ULID with ``msg_``."""

    type: Literal["message.post"] = "message.post"
    space_id: str
    kind: Literal["text"] = "text"
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    reply_to: str | None = None
