"""Attachments: the workspace's caps, and every fetch a harness makes (spec/messages.md).

A file itself is logged with the message that posts it (``MessagePost.attachments``);
these are the two facts about files that are not a message.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from chips_common.events.base import EventBody, register


@register
class AttachmentCapsSet(EventBody):
    """An owner or admin capped photos, videos and files separately, in bytes.

    A cap left out (or null) leaves that kind under the server's ceiling only
    (``CHIPS_MAX_ATTACHMENT_BYTES``), which no cap can raise. Every client learns the
    caps from the log, so a file over its cap is refused before it is sent.
    """

    in_space: ClassVar[bool] = False

    type: Literal["attachment.caps_set"] = "attachment.caps_set"
    photos_bytes: int | None = Field(default=None, ge=1)
    videos_bytes: int | None = Field(default=None, ge=1)
    files_bytes: int | None = Field(default=None, ge=1)


@register
class AttachmentFetched(EventBody):
    """A harness fetched a file of the room by its signed URL; written by Chips (the audit)."""

    client_writable: ClassVar[bool] = False

    type: Literal["attachment.fetched"] = "attachment.fetched"
    space_id: str
    attachment_id: str
    name: str = Field(min_length=1, max_length=255)
    message_id: str | None = None
    thumbnail: bool | None = None
