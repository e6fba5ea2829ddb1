"""The socket's frames and what Chips delivers beside the logged events.

Logged events are in :mod:`chips_sdk.events` (generated from the catalogue's schemas).
What is here is the delivery vocabulary of docs/protocol.md and docs/harness-guide.md:
frames, and the shapes a harness is handed with a turn (``message.new``'s ``context`` and
``room``).
"""

from __future__ import annotations

from typing import Any, Literal, Required, TypedDict

from chips_sdk.events import Logged, MessagePostFields


class Ack(TypedDict, total=False):
    """The answer to a write: its ``seq`` in the log (``None`` when nothing was logged)."""

    frame: Literal["ack"]
    idempotency_key: Required[str]
    seq: Required[int | None]
    duplicate: Required[bool]
    held: bool
    # For a held post: {count, allowance} (allowance absent with no hold).
    exchange: dict[str, int]
    message_id: str  # for a message.post: the message's id
    trace_id: str
    # What the write created: a space.created's space (a thread's too), an agent.
    space_id: str
    agent_id: str


class ErrorFrame(TypedDict, total=False):
    frame: Literal["error"]
    code: Required[str]
    message: Required[str]
    idempotency_key: str
    field: str


class ReceiptFrame(TypedDict, total=False):
    """What Chips did with a person's words while a run was live: queued or steered."""

    frame: Literal["receipt"]
    idempotency_key: Required[str]
    disposition: Required[Literal["queued", "steered"]]
    run_ids: list[str]


class HarnessInfo(TypedDict, total=False):
    id: Required[str]
    name: Required[str]
    owner_id: str | None
    capabilities: list[str]


class AgentInfo(TypedDict, total=False):
    """One of the harness's agents, in its hello once it declared ``agents``."""

    id: Required[str]
    name: Required[str]
    key: str
    space_id: str | None
    main: bool
    state: Literal["active", "archived"]
    # Its face (docs/adr/0153): one emoji, or a picture's attachment id; absent for none.
    face: str


class RestartFrame(TypedDict, total=False):
    """A person asked Chips to restart this harness (sent to a socket that accepts it)."""

    frame: Literal["restart"]
    asked_by: Required[str]
    asked_at: Required[str]


class PersonInfo(TypedDict, total=False):
    id: Required[str]
    name: Required[str]
    role: str


class Hello(TypedDict, total=False):
    """The server's hello: who this connection is, and the autonomy in force."""

    frame: Literal["hello"]
    protocol: dict[str, int]
    server: dict[str, str]
    workspace_id: Required[str]
    spaces: list[str]
    harness: HarnessInfo
    person: PersonInfo
    autonomy: str
    head_seq: int
    agents: list[AgentInfo]


class Who(TypedDict, total=False):
    id: Required[str]
    kind: Required[str]
    name: Required[str]


class ContextLine(TypedDict, total=False):
    """One line of what was said in the room: ``said``, ``joined``, ``left``, ``renamed``…"""

    seq: Required[int]
    at: str
    kind: Required[str]
    # "from" is a keyword: read it as line["from"] (the TypedDict's functional form below).
    message_id: str
    text: str
    title: str
    addressed_to: list[str]
    edited: bool
    held: bool
    cut: bool


class ContextFile(TypedDict, total=False):
    name: Required[str]
    version: int
    attachment_id: str
    url: str


class Context(TypedDict, total=False):
    """What was said in the room since the taker's last turn there, up to this message."""

    lines: Required[list[dict[str, Any]]]
    since_seq: int
    truncated: bool
    before: int
    files: list[ContextFile]
    spend: dict[str, Any]


class RoomMember(TypedDict, total=False):
    participant_id: Required[str]
    kind: Required[str]
    name: Required[str]
    handle: str
    harness: str
    lead: bool


class Room(TypedDict, total=False):
    """Who is in the room, and the note Chips words for each taker (keyed by its id)."""

    members: Required[list[RoomMember]]
    notes: dict[str, str]
    rules: dict[str, str]


class WorkingTurn(TypedDict):
    """A turn one of your agents has going in the room, to hand the words at its next step."""

    agent_id: str
    run_id: str


# ``for`` is a Python keyword, so the field is declared the functional way: which of your
# agents take the turn (a harness that declared ``agents``; never empty).
_TakenBy = TypedDict("_TakenBy", {"for": list[str]}, total=False)


class MessageNew(MessagePostFields, Logged, _TakenBy, total=False):
    """A message that is a turn for this harness: answer it."""

    type: Required[Literal["message.new"]]
    message_id: Required[str]
    context: Context
    room: Room
    handed: bool
    # Words nobody took, handed to the room's lead (docs/product/websocket.md, Who leads).
    lead: bool
    working_turns: list[WorkingTurn]


class MessageOverheard(MessagePostFields, Logged, total=False):
    """A message for somebody else in the room: answer nothing."""

    type: Required[Literal["message.overheard"]]
    message_id: Required[str]
    working_turns: list[WorkingTurn]


Delivered = MessageNew | MessageOverheard
