"""Attachments: the workspace's caps, and every fetch a harness makes (docs/product/messages.md).

A file itself is logged with the message that posts it (``MessagePost.attachments``);
these are the facts about files that are not a message: the caps, the fetch audit, and
what Chips heard in a voice note.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from chips_common.events.base import EventBody, Ref, register
from chips_common.events.messages import MAX_TEXT


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
    space_id: Ref
    attachment_id: Ref
    name: str = Field(min_length=1, max_length=255)
    message_id: Ref | None = None
    thumbnail: bool | None = None


@register
class AttachmentTranscribed(EventBody):
    """What Chips heard in a voice note, written on it once it was posted (docs/adr/0137).

    Written by Chips (the attachments service), never by a client, after the post and off
    its path: ``outcome`` is ``words`` with the ``transcript``, or says why there is none
    (``nothing`` heard, ``too_long`` for the configured cap, ``failed``). ``note`` is a
    sentence a screen shows as it is: why there are no words, or with words that a machine
    heard them, so a name or a number may be misheard. ``engine`` names what heard it.
    """

    client_writable: ClassVar[bool] = False

    type: Literal["attachment.transcribed"] = "attachment.transcribed"
    space_id: Ref
    message_id: Ref
    attachment_id: Ref
    outcome: Literal["words", "nothing", "too_long", "failed"]
    transcript: str | None = Field(default=None, max_length=MAX_TEXT)
    note: str | None = Field(default=None, max_length=500)
    engine: str = Field(min_length=1, max_length=100)
