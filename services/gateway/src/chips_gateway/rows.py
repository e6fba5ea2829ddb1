"""The rows the gateway's HTTP reads build, as types (docs/adr/0150).

Each read turns its SQL rows into one of these ``TypedDict``\\ s, so mypy checks every
field a read sets, and they cost nothing at run time: the answer is the same dict, and
the same bytes, as before. The answer models (``chips_gateway.answers``) say the same
fields for the OpenAPI document; ``tests/test_rows.py`` holds each row here to its model,
so the two cannot drift. A field the read leaves out when it does not apply is
``NotRequired`` here and ``absent()`` there.

JSON the read hands on without reading it (a card's body, a run's ``chips``) is
:data:`~pydantic.JsonValue`, a real recursive type, not ``Any``.
"""

from typing import Literal, NotRequired, TypedDict

from pydantic import JsonValue

from chips_common.db.spend_reads import Pause
from chips_common.events import JsonObject, LoggedJson
from chips_common.events.wire import DeliveredJson, LineJson
from chips_common.rules.exchanges import SettingsJson
from chips_common.rules.may import CardState
from chips_common.rules.spend import SpendFacts

# --- the log (api/events.py) --------------------------------------------------------------


class EventPage(TypedDict):
    events: list[DeliveredJson]
    next_since: int


class ContextPage(TypedDict):
    lines: list[LineJson]
    truncated: bool
    before: int


# --- runs (api/runs.py) -------------------------------------------------------------------


class RunProgress(TypedDict):
    phase: str | None
    verb: str | None
    progress: float | None
    text: str | None


class RunSpending(TypedDict):
    tokens_in: int
    tokens_out: int
    cost_usd: float
    uncosted: int


class Spending(RunSpending):
    reports: int


class RunRow(TypedDict):
    run_id: str
    space_id: str
    harness_id: str
    agent_id: str | None
    goal: str
    session_id: str | None
    message_id: str | None
    chips: JsonValue
    state: str
    status: RunProgress
    summary: str | None
    why: str | None
    started_seq: int
    started_at: str
    ended_seq: int | None
    ended_at: str | None
    usage: RunSpending


class Step(TypedDict):
    step_id: str
    status: Literal["started", "done", "failed"]
    title: str | None
    summary: str | None
    started_seq: int
    last_seq: int | None


class RunCard(TypedDict):
    kind: Literal["approval", "question"]
    id: str
    run_id: str
    space_id: str
    harness_id: str | None
    asked_seq: int
    expires_at: str | None
    card: JsonObject
    answered_by: str | None
    answer: JsonValue
    answered_seq: int | None


class Lane(TypedDict):
    lane_id: str
    run_id: str | None
    from_space_id: str
    to_space_id: str | None
    opener_id: str | None
    task: str | None
    worker: str | None
    working_run_id: str | None
    state: str
    summary: str | None
    why: str | None
    cost_usd: float | None
    ended_by: str | None
    opened_seq: int
    opened_at: str
    ended_seq: int | None
    ended_at: str | None
    direction: NotRequired[Literal["out", "in"]]


class RunMessage(TypedDict):
    message_id: str
    seq: int
    author_id: str
    kind: str
    text: str | None
    ts: str
    edited: bool
    deleted: bool


class Run(RunRow):
    lane_id: str | None
    steps: list[Step]
    cards: list[RunCard]
    lanes: list[Lane]
    messages: list[RunMessage]
    as_of_seq: int


class SpaceRuns(TypedDict):
    runs: list[RunRow]
    usage: Spending
    as_of_seq: int


class DaySpending(Spending):
    day: str


class HarnessUsage(TypedDict):
    harness_id: str
    usage: Spending
    days: list[DaySpending]
    as_of_seq: int


class SpaceLanes(TypedDict):
    lanes: list[Lane]
    as_of_seq: int


class Approvals(TypedDict):
    approvals: list[RunCard]
    as_of_seq: int


# --- rooms (api/rooms.py, api/spaces.py) ---------------------------------------------------


class SpaceFields(TypedDict):
    id: str
    kind: Literal["direct", "group", "thread"]
    title: str | None
    state: Literal["open", "closed"]
    home_of: str | None
    key: str | None
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
    root_text: str | None
    asked_of: str | None
    lead_id: str | None


class SpaceMember(TypedDict):
    participant_id: str
    standing: str


class SpaceRow(SpaceFields):
    members: list[SpaceMember]


class SpaceList(TypedDict):
    as_of_seq: int
    archived_count: int
    spaces: list[SpaceRow]


class FaceFields(TypedDict, total=False):
    """An agent's face (docs/adr/0153): one emoji, or a picture's attachment id with a URL
    signed for the reader (``files.FileLinks.face``)."""

    face: str
    face_url: str


def put_face(target: FaceFields, face: FaceFields) -> None:
    """Write an agent's face fields into a read's entry (a participant, a member)."""
    if "face" in face:
        target["face"] = face["face"]
    if "face_url" in face:
        target["face_url"] = face["face_url"]


class SheetMember(SpaceMember, FaceFields):
    name: str | None
    kind: str | None
    lead: NotRequired[bool]


class CardMay(TypedDict):
    kind: Literal["approval", "question"]
    id: str
    # The rule's states; a waiting card, the only kind listed, is never "answered".
    state: CardState
    deciders: list[str]


class RoomMay(TypedDict):
    """What the reader may do in a room (``chips_gateway.may``)."""

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
    as_of_seq: int
    members: list[SheetMember]
    may: RoomMay


# "from" is a keyword: the functional form names it.
FeedbackItem = TypedDict(
    "FeedbackItem",
    {
        "from": str,
        "kind": Literal["reaction", "correction"],
        "emoji": NotRequired[str],
        "note": NotRequired[str],
        "reasons": NotRequired[list[str]],
    },
)


class Said(TypedDict, total=False):
    """What Chips filled in on a post, as its logged event keeps it: files (the
    catalogue's attachments, as JSON), who it was for, what the referee said."""

    attachments: list[JsonObject]
    addressed_to: list[str]
    held: bool
    held_for: list[str]
    held_since: str
    exchange: JsonObject


class Line(TypedDict):
    id: str
    seq: int
    kind: str
    author_id: str
    text: str | None
    reply_to: str | None
    ts: str
    card: NotRequired[JsonObject]
    # Each linked for the reader (files.FileLinks.link).
    attachments: NotRequired[list[JsonObject]]
    addressed_to: NotRequired[list[str]]
    held: NotRequired[bool]
    held_for: NotRequired[list[str]]
    held_since: NotRequired[str]
    exchange: NotRequired[JsonObject]
    run_id: NotRequired[str]
    edited: bool
    deleted: bool
    pinned: bool
    feedback: list[FeedbackItem]
    heard_by: NotRequired[list[str]]


class LinePage(TypedDict):
    as_of_seq: int
    messages: list[Line]
    events: NotRequired[list[LoggedJson]]


class Spend(SpendFacts):
    paused: Pause | None


# --- who is in the workspace, and a harness's face (api/directory.py) ----------------------


class RefereeSettings(SettingsJson):
    seq: int | None


class Participant(FaceFields):
    participant_id: str
    kind: str
    name: str
    role: str | None
    owner_id: str | None
    capabilities: list[str] | None
    active: NotRequired[bool]  # false for a deactivated person
    # An agent's: its harness, its key, what it is doing and where.
    harness_id: NotRequired[str]
    harness: NotRequired[str | None]
    key: NotRequired[str | None]
    state: NotRequired[str]
    main: NotRequired[bool]
    space_id: NotRequired[str | None]
    held: NotRequired[int]
    name_by: NotRequired[str]
    # A harness's face (and an agent's, its harness's), when Redis answers.
    status: NotRequired[str]
    restart_asked_at: NotRequired[str]
    last_seen_at: NotRequired[str | None]


class Directory(TypedDict):
    as_of_seq: int
    participants: list[Participant]


class RestartAsked(TypedDict):
    harness_id: str
    asked_by: str
    asked_at: str
    sockets: int
    status: Literal["restarting"]


class HarnessStatus(TypedDict):
    harness_id: str
    status: str


# --- a harness's spaces and policy (api/harnesses.py) --------------------------------------


class OpenedSpace(TypedDict):
    space_id: str
    key: str
    shared: bool | None
    title: str | None
    state: str
    opened: bool
    joined: bool
    claimed: bool
    retitled: bool
    seq: int | None


class OpenerSpace(TypedDict):
    """A space a harness opened by key. One it is no longer in shows only what names it
    (``guard.now_visible``): the rest is null."""

    space_id: str
    key: str | None
    shared: bool | None
    title: str | None
    state: str | None
    open: bool | None
    moved_by: str | None
    moved_seq: int | None
    member: bool


class AskedSpace(TypedDict):
    space_id: str
    title: str | None
    state: str
    asked_by: str
    asked_seq: int


class HarnessSpaces(TypedDict):
    as_of_seq: int
    spaces: list[OpenerSpace]
    asked: list[AskedSpace]


class Policy(TypedDict):
    harness_id: str
    autonomy: str
    rules: list[JsonObject] | None  # the catalogue's PolicyRule, as the row keeps it


# --- a room's files (files.py, api/attachments.py) -----------------------------------------


class RoomFileBy(TypedDict):
    """Who said the post that carries a file: a participant, or one no longer known."""

    id: str
    kind: str
    name: NotRequired[str]


class FileRow(TypedDict):
    """A version of a room's file, as read, before it is linked for a reader."""

    name: str
    version: int
    attachment_id: str
    sha256: str
    byte_size: int
    mime_type: str
    kind: Literal["photo", "video", "file", "voice_note"]
    by: RoomFileBy
    at: str
    message_id: str | None
    thumbnail: bool
    width: NotRequired[int]
    height: NotRequired[int]
    duration_ms: NotRequired[int]
    replaces: NotRequired[str]


class Links(TypedDict):
    """A file's links signed for one reader (``files.FileLinks``)."""

    url: str
    url_expires_at: str
    thumbnail_url: NotRequired[str]


class RoomFile(FileRow, Links):
    pass


class RoomFiles(TypedDict):
    files: list[RoomFile]


# --- signing in with the team's identity provider (api/oidc.py) ----------------------------


class ProviderSignIn(TypedDict):
    enabled: bool
    button: NotRequired[str]


# A row named otherwise than its answer model (by default they share a name).
ANSWER_NAMES: dict[str, str] = {}
# Rows a read builds on the way to its answer, with no answer model of their own.
NOT_ANSWERS = frozenset({"Said", "FileRow", "Links", "FaceFields"})
