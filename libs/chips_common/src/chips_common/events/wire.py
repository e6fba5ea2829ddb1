"""A logged event as the services after the door read it: a ``TypedDict``, checked by mypy.

The eventlog decodes each event once, into its catalogue model (``parse_event``), and logs
it as JSON. The services that read the log or the stream take that JSON
as an :class:`EventJson`: its envelope, and every field any catalogue type has, each typed
as the JSON the model dumps it as (``mode="json"``, ``exclude_none``: a field is there
with a value, or not there). It costs nothing at run time: the event is the same dict it
was decoded into, handed on without a copy or a validation, so a feed that fans one event
out to many sockets pays for its JSON once (docs/adr/0150).

One ``TypedDict`` for every type, not one per type: the rules fold whatever comes, and
read an event's fields by its ``type``; mypy checks each field's name and value.
``test_catalogue.py`` (chips_common's tests) holds it to the catalogue, field by field.

A field whose value is one of the catalogue's nested models (a card, a receipt, a rule)
is a :data:`JsonObject` here, read with a check of each value where it is read; an
attachment, which the gateway reads and signs, has a ``TypedDict`` of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, NotRequired, Required, cast

from pydantic import JsonValue
from typing_extensions import TypedDict

from chips_common.events.base import JsonObject, canonical


class ActorJson(TypedDict):
    """Who logged an event; an agent's says its harness (docs/adr/0070)."""

    kind: str
    id: str
    harness_id: NotRequired[str]


class HeardJson(TypedDict, total=False):
    """What was heard in a voice note, on it as it is handed to a reader (never logged)."""

    outcome: Required[str]
    transcript: str
    note: str
    engine: str


class AttachmentJson(TypedDict, total=False):
    """A file a message carries, as the door stored it (``events.messages.Attachment``)."""

    attachment_id: Required[str]
    name: Required[str]
    mime_type: Required[str]
    kind: Required[Literal["photo", "video", "voice_note", "file"]]
    byte_size: Required[int]
    sha256: Required[str]
    version: Required[int]
    width: int
    height: int
    duration_ms: int
    thumbnail: bool
    replaces: str
    heard: HeardJson
    # What a socket or a read adds to the file it hands out: signed links (files.py).
    url: str
    url_expires_at: str
    thumbnail_url: str


class ReceiptJson(TypedDict):
    """What Chips did with a person's words while a run was live (``events.runs.Receipt``)."""

    idempotency_key: str
    disposition: Literal["queued", "steered"]
    run_ids: list[str]
    harness_ids: list[str]


class WorkingJson(TypedDict):
    """A turn working in a room, as ``room.working`` tells it (``events.referee.Working``)."""

    agent_id: str
    run_id: str
    since: str
    heard_at: str
    silent_at: str
    last_step: NotRequired[str]


class RestingJson(TypedDict):
    """An agent with no turn going, and since when (``events.referee.Resting``)."""

    agent_id: str
    since: str


# The envelope every logged event has (``base.ENVELOPE_FIELDS`` and ``type``).
ENVELOPE_KEYS = frozenset({"v", "id", "seq", "ts", "workspace_id", "actor", "type"})


class EventJson(TypedDict, total=False):
    """A logged event: the envelope, then any catalogue type's fields."""

    # The envelope.
    v: Required[int]
    id: Required[str]
    seq: Required[int]
    ts: Required[str]
    workspace_id: Required[str]
    actor: Required[ActorJson]
    type: Required[str]
    # The fields of the catalogue's types, by name.
    about: str
    action: str
    active: bool
    addressed_to: list[str]
    agent_id: str
    answerers: list[str]
    approval: JsonObject
    approval_id: str
    args: str
    artifact: JsonObject
    asked_of: str
    attachment_id: str
    attachments: list[AttachmentJson]
    autonomy: str
    bound_to: str
    budget: JsonObject
    by: str
    capabilities: list[str]
    catch_up: ContextJson
    checkpoint: JsonObject
    chips: bool
    circles: bool
    cost_usd: float
    decision: str
    default: str
    default_taken: bool
    delete: bool
    device_id: str
    disconnected: list[str]
    edited: str
    emoji: str
    engine: str
    exchange: JsonObject
    expires_at: str
    files_bytes: int
    face: str
    follows: list[JsonObject]
    fork_of: str
    forked_from: str
    free_text: bool
    from_space_id: str
    goal: str
    handoff: JsonObject
    harness_id: str
    held: bool
    held_for: list[str]
    held_since: str
    hold: int | str
    home_of: str
    idempotency_key: str
    idle: list[RestingJson]
    invite_id: str
    key: str
    kind: str
    lane_id: str
    left_space_id: str
    locked: bool
    made_for: str
    main: bool
    members: list[str]
    mentions: list[str]
    message_id: str
    mode: str
    model: str
    moved_to: str
    multiple: bool
    name: str
    name_by: str
    note: str
    opened_for: str
    options: list[JsonObject]
    outcome: str
    owner_id: str
    parent_space_id: str
    participant_id: str
    phase: str
    photos_bytes: int
    preview: str
    previous_name: str
    progress: float
    prompt: str
    question: JsonObject
    question_id: str
    quiet_seconds: int
    reason: str
    reasons: list[str]
    receipt: JsonObject
    replaced: str
    replaces: dict[str, str]
    replacing: str
    reply_to: str
    risk: str
    role: str
    rooms_handed: list[str]
    rooms_to: str
    root_message_id: str
    rule: JsonObject
    rules: list[JsonObject]
    run_id: str
    run_receipt: ReceiptJson
    said_by: str
    scope: str
    session_id: str
    shared: bool
    since: str
    since_seq: int
    space_id: str
    spend: JsonObject
    standing: str
    state: str
    # A run's status (``run.status``), or a message's status card.
    status: str | JsonObject
    step_id: str
    stop: int | str
    # A run's summary, a lane's, or a message's summary card.
    summary: str | JsonObject
    task: JsonObject
    text: str
    threads: list[str]
    threshold: int
    thumbnail: bool
    time_zone: str
    title: str
    to: list[str]
    to_space_id: str
    tokens_in: int
    tokens_out: int
    transcript: str
    upload_ids: list[str]
    usd: float
    value: str
    values: list[str]
    verb: str
    videos_bytes: int
    why: str
    withdrawn: bool
    worker: str
    working: list[WorkingJson]


class SpeakerJson(TypedDict):
    """Who said a message, with their standing in the room (``rules.room.speaker``); only
    the actor's id and kind when they are no longer in it."""

    id: str
    kind: str
    name: NotRequired[str]
    standing: NotRequired[str]


# One line of a turn's context (``rules.context_lines``): said, joined, left, renamed,
# archived or unarchived, with who said or did it, as of the message it is handed with.
# ``from`` is a keyword, so this is spelt as a mapping.
LineJson = TypedDict(
    "LineJson",
    {
        "seq": Required[int],
        "at": Required[str],
        "kind": Required[str],
        "from": Required[dict[str, str]],
        "message_id": str | None,
        "text": str,
        "title": str,
        "addressed_to": list[str],
        "files": list[str],
        "transcript": str,
        "edited": bool,
        "cut": bool,
    },
    total=False,
)


class ContextJson(TypedDict, total=False):
    """A turn's ``context`` (or an attach's ``catch_up``): the lines said since the taker
    last spoke, fitted to its budget, and the room's files and job as of the message."""

    lines: Required[list[LineJson]]
    since_seq: Required[int]
    truncated: Required[bool]
    # The seq of the oldest line, or of the message when there is none.
    before: int
    # The room's files (the gateway's ``FileRow``) and its job's spend (``SpendFacts``).
    files: Sequence[Mapping[str, object]]
    spend: Mapping[str, object]


class RoomMemberJson(TypedDict):
    """One of a room's members as a turn's ``room`` lists them (``rules.room``)."""

    participant_id: str
    kind: str
    name: str
    harness: NotRequired[str]
    standing: NotRequired[str]
    handle: NotRequired[str]
    lead: NotRequired[bool]


class RoomJson(TypedDict):
    """A turn's ``room``: who is in it, and each taker's note and rules."""

    members: list[RoomMemberJson]
    notes: dict[str, str]
    rules: dict[str, str]


# What a turn adds to a message it hands a harness: who said it, its context, the room
# as the taker is told it. ``from`` is a keyword, so this is spelt as a mapping.
TurnJson = TypedDict(
    "TurnJson", {"from": SpeakerJson, "context": ContextJson, "room": RoomJson}, total=False
)

# What else a socket adds to an event it shapes for its recipient
# (docs/product/websocket.md): whom of a harness's agents a message is for, the turns
# working where it was said, whether it was handed on (and to the room's lead).
_Shaped = TypedDict(
    "_Shaped",
    {
        "for": list[str],
        "working_turns": list[dict[str, str]],
        "handed": bool,
        "lead": bool,
        "resolved_elsewhere": bool,
    },
    total=False,
)


class DeliveredJson(EventJson, TurnJson, _Shaped, total=False):
    """A logged event as one recipient is sent it: a ``message.post`` retyped for a
    harness (``message.new``, ``message.overheard``), with its turn's speaker, context and
    room, the turns working where it was said, and whether it was handed on."""


def delivered(event: EventJson) -> DeliveredJson:
    """``event`` as it is sent when shaping adds nothing: the same object."""
    return cast(DeliveredJson, event)


def event_json(logged: Mapping[str, object]) -> EventJson:
    """A logged event the eventlog hands on (its ack, the stream, a row's body) read as
    what it is. The eventlog built it from a catalogue model it had just validated, so
    nothing is checked again here: this only says so to mypy."""
    return cast(EventJson, logged)


def canonical_event(body: Mapping[str, object]) -> EventJson:
    """A stored event's body (JSONB, whose keys Postgres reorders) in the order it is sent."""
    return event_json(canonical(body))


def fields_of(event: EventJson) -> Mapping[str, JsonValue]:
    """An event's fields by a name known only at run time (a rule's table of them): each
    is JSON, as the event is, though mypy cannot see a ``TypedDict``'s values as such."""
    return cast(Mapping[str, JsonValue], event)
