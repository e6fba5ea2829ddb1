"""What the room routes answer: rooms, their sheet, lines, spend and files."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chips_common.events import JsonObject
from chips_common.events.messages import Attachment, ExchangeFacts
from chips_gateway.answers.base import Answer, absent
from chips_gateway.answers.events import LoggedEvent


class SpaceFields(Answer):
    id: str
    kind: Literal["direct", "group", "thread"]
    title: str | None
    state: Literal["open", "closed"]
    home_of: str | None
    key: str | None = Field(description="the key a harness opened it by (null for by hand)")
    shared: bool | None
    locked: bool
    created_by: str
    created_at: str
    last_seq: int
    message_count: int
    moved_by: str | None
    moved_seq: int | None
    parent_space_id: str | None
    root_message_id: str | None
    root_text: str | None = Field(
        description="a thread's first words: those of the message it was opened on"
        " (null for a room, or a root taken back)"
    )
    asked_of: str | None = Field(
        description="the harness a person opened the room asking of (space.created asked_of)"
    )
    lead_id: str | None


class SpaceMember(Answer):
    participant_id: str
    standing: str


class SpaceRow(SpaceFields):
    members: list[SpaceMember]


class SpaceList(Answer):
    """``GET /v1/spaces``: the caller's spaces, newest activity first."""

    as_of_seq: int
    archived_count: int
    spaces: list[SpaceRow]


class SheetMember(SpaceMember):
    name: str | None
    kind: str | None
    lead: bool | None = absent("true for the room's lead")
    face: str | None = absent("an agent's face: one emoji, or a picture's attachment_id")
    face_url: str | None = absent("a picture face's URL, signed for the reader")


class CardMay(Answer):
    """A card still waiting for an answer, as it stands for the reader: ``open`` when they
    may answer it now, ``theirs`` when it is somebody else's to decide (``deciders``: the
    harness's owner, then the people the card names), ``expired`` or ``ended`` (the run
    that asked ended) when nobody may."""

    kind: Literal["approval", "question"]
    id: str
    state: Literal["open", "theirs", "expired", "ended"]
    deciders: list[str]


class RoomMay(Answer):
    """What the reader may do in the room, each act decided by the rule the door decides it
    by: what is false here the door refuses, what is true it takes. ``delete`` is
    ``erase`` (the room is erased), ``archive`` (a direct room nobody could open again is
    archived instead) or null (refused). ``take_back``: taking back somebody else's
    message. ``remove``: the members shown they may take out (themselves: leaving);
    ``add``: who in the workspace they may add. Everything is false for a harness."""

    rename: bool
    archive: bool
    unarchive: bool
    lock: bool
    unlock: bool
    delete: Literal["erase", "archive"] | None
    pause: bool
    pin: bool
    take_back: bool
    remove: list[str]
    add: list[str]
    cards: list[CardMay]


class Sheet(SpaceFields):
    """``GET /v1/spaces/{space_id}``: the room sheet, with what the reader may do there."""

    as_of_seq: int
    members: list[SheetMember]
    may: RoomMay


class LinkedAttachment(Attachment):
    """A file as a reader is given it: the catalogue's attachment, linked for them."""

    url: str
    url_expires_at: str
    thumbnail_url: str | None = absent()


class FeedbackItem(Answer):
    from_: str = Field(alias="from")
    kind: Literal["reaction", "correction"]
    emoji: str | None = absent()
    note: str | None = absent()
    reasons: list[str] | None = absent()


class Line(Answer):
    """One line of a room: a message, or a muted ``system`` line."""

    id: str
    seq: int
    kind: str
    author_id: str
    text: str | None
    reply_to: str | None
    ts: str
    card: JsonObject | None = absent()
    attachments: list[LinkedAttachment] | None = absent()
    addressed_to: list[str] | None = absent()
    held: bool | None = absent()
    held_for: list[str] | None = absent()
    held_since: str | None = absent()
    exchange: ExchangeFacts | None = absent()
    run_id: str | None = absent()
    edited: bool
    deleted: bool
    pinned: bool
    feedback: list[FeedbackItem]
    heard_by: list[str] | None = absent()


class LinePage(Answer):
    """``GET /v1/spaces/{space_id}/messages``: lines oldest first; with ``before``, for a
    person, the events the room draws beside them."""

    as_of_seq: int
    messages: list[Line]
    events: list[LoggedEvent] | None = absent()


class Pause(Answer):
    why: Literal["spend", "person"]
    by: str
    seq: int
    at: str
    spend: Any = absent()


class Spend(Answer):
    """``GET /v1/spaces/{space_id}/spend``: the job's spend against its ceiling."""

    ceiling_usd: float
    spent_usd: float
    since_seq: int
    uncounted_runs: int
    paused: Pause | None


class RoomFileBy(Answer):
    id: str
    name: str | None = None
    kind: str | None = None


class RoomFile(Answer):
    attachment_id: str
    name: str
    version: int
    sha256: str
    byte_size: int
    mime_type: str
    kind: Literal["photo", "video", "file", "voice_note"]
    by: RoomFileBy
    at: str
    message_id: str | None
    thumbnail: bool
    width: int | None = absent()
    height: int | None = absent()
    duration_ms: int | None = absent()
    replaces: str | None = absent("the attachment this version replaces")
    url: str
    url_expires_at: str
    thumbnail_url: str | None = absent()


class RoomFiles(Answer):
    files: list[RoomFile]
