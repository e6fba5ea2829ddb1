"""The socket's frames as types, both ways (docs/protocol.md, The socket).

Each frame is a ``TypedDict``: the session builds and mypy checks them by these names,
and they cost nothing at run time, so what goes down the socket is the same bytes it
always was (orjson encodes the dict). The AsyncAPI document's payloads are generated
from them (``asyncapi.messages``), so the document, the code and the app's generated
types (web/src/gen/api.ts) say one thing.

An event waiting to be shaped for its socket is not a frame: it is a :class:`Pending`,
which the send loop turns into an ``event`` frame (or into nothing, for an event the
socket's view leaves out).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal, NotRequired, Union

from pydantic import WithJsonSchema
from typing_extensions import TypedDict

from chips_common.events import JsonObject
from chips_common.events.wire import DeliveredJson, EventJson
from chips_common.rules.notifications import Notification

if TYPE_CHECKING:
    from chips_gateway.windows import AsOf


def ref(name: str) -> WithJsonSchema:
    """A part that is a schema of the OpenAPI document's, by name (resolved by
    ``asyncapi.frame_schemas``: pydantic does not follow a reference it did not make)."""
    return WithJsonSchema({"x-schema": name})


# --- a client's frames --------------------------------------------------------------------


class ClientVersions(TypedDict):
    min: int
    max: NotRequired[int]


class ClientHello(TypedDict):
    """The first frame: the protocol versions the client speaks, what it accepts."""

    frame: Literal["hello"]
    protocol: ClientVersions
    client: NotRequired[str]
    accepts: NotRequired[list[Literal["events", "restart"]]]
    # What the client asks its context to hold, read with a check of each value
    # (``windows.Budget.from_hello``).
    context: NotRequired[JsonObject]


class Subscribe(TypedDict):
    """Start the flow of events, after ``since`` (from now without)."""

    frame: Literal["subscribe"]
    workspace_id: str
    since: NotRequired[int]


class EventWriteFrame(TypedDict):
    """A write: one of the catalogue's events, with its idempotency key."""

    frame: Literal["event"]
    # As the client sent it: the eventlog's door decodes it into its catalogue model.
    event: Annotated[JsonObject, ref("EventWrite")]


# --- the gateway's frames -----------------------------------------------------------------


class ServerVersions(TypedDict):
    min: int
    max: int
    version: int


class ServerName(TypedDict):
    name: str
    gateway: str


class HelloPerson(TypedDict):
    id: str
    name: str
    role: str


class HelloHarness(TypedDict):
    id: str
    name: str
    owner_id: str | None
    capabilities: list[str]


class HelloAgent(TypedDict):
    """One of a harness's agents, and its room (``agents.agents_with_rooms``)."""

    id: str
    name: str
    key: str | None
    space_id: str | None
    main: bool
    state: str
    face: NotRequired[str]


class ServerHello(TypedDict):
    """The answer to hello: who the socket is, its rooms, and the log's head."""

    frame: Literal["hello"]
    protocol: ServerVersions
    server: ServerName
    workspace_id: str
    spaces: list[str]
    head_seq: int
    harness: NotRequired[HelloHarness]
    agents: NotRequired[list[HelloAgent]]
    autonomy: NotRequired[str]
    person: NotRequired[HelloPerson]


class EventFrame(TypedDict):
    """One logged event, as shaped for this socket."""

    frame: Literal["event"]
    event: Annotated[DeliveredJson, ref("LoggedEvent")]


class EventsFrame(TypedDict):
    """A replayed batch, oldest first."""

    frame: Literal["events"]
    events: Annotated[
        list[DeliveredJson],
        WithJsonSchema(
            {
                "type": "array",
                "maxItems": 500,
                "items": {"$ref": "#/components/schemas/LoggedEvent"},
            }
        ),
    ]


class ExchangeCount(TypedDict, total=False):
    """Where a held post leaves the room's exchange (``acks.Exchange``)."""

    count: int | None
    allowance: int | None


class AckFrame(TypedDict):
    """A write is in the log (the fields of ``Ack``, as ``POST /v1/events`` answers)."""

    frame: Literal["ack"]
    idempotency_key: str
    seq: int | None
    duplicate: bool
    trace_id: NotRequired[str | None]
    held: NotRequired[bool | None]
    exchange: NotRequired[ExchangeCount | None]
    space_id: NotRequired[str | None]
    message_id: NotRequired[str | None]
    agent_id: NotRequired[str | None]


class ErrorFrame(TypedDict):
    """A refusal: a code and a sentence, and what it is about (the ``Error`` shape)."""

    frame: Literal["error"]
    code: str
    message: str
    field: NotRequired[str]
    idempotency_key: NotRequired[str]
    retry_after: NotRequired[float]
    seq: NotRequired[int | None]
    space_id: NotRequired[str]
    workspace_id: NotRequired[str]


class ReceiptFrame(TypedDict):
    """What Chips did with a person's words while a run was live."""

    frame: Literal["receipt"]
    idempotency_key: str
    disposition: Literal["queued", "steered"]
    run_ids: list[str]


class RestartFrame(TypedDict):
    """The harness's owner asked it to restart."""

    frame: Literal["restart"]
    asked_by: str
    asked_at: str


class NotificationFrame(TypedDict):
    """A notification of the person made or changed, on every socket of theirs
    (docs/notifications.md): the same shape as GET /v1/notifications lists."""

    frame: Literal["notification"]
    type: Literal["notification"]
    notification: Notification
    unread: int


ServerFrame = Union[  # noqa: UP007 (a runtime union, for pydantic)
    ServerHello,
    EventFrame,
    EventsFrame,
    AckFrame,
    ErrorFrame,
    ReceiptFrame,
    RestartFrame,
    NotificationFrame,
]

# Each frame by the message name the AsyncAPI document gives it: a client's, then the
# gateway's (``hello`` is both ways: the client's hello is ``hello``, the answer
# ``server_hello``; an ``event`` written is ``event``, one delivered ``delivered``).
# (Types, made into schemas by pydantic's ``TypeAdapter``.)
SENT: dict[str, type] = {"hello": ClientHello, "subscribe": Subscribe, "event": EventWriteFrame}
RECEIVED: dict[str, type] = {
    "server_hello": ServerHello,
    "ack": AckFrame,
    "error": ErrorFrame,
    "delivered": EventFrame,
    "events": EventsFrame,
    "receipt": ReceiptFrame,
    "restart": RestartFrame,
    "notification": NotificationFrame,
}


@dataclass(frozen=True)
class Pending:
    """A logged event queued for a socket, to be shaped by its send loop: with what the
    feed's window told of it (``windows.AsOf``), and the own agents of a harness shown
    the pre-agents view (docs/adr/0079)."""

    event: EventJson
    as_of: AsOf | None = None
    view: Mapping[str, str] | None = None


# What a socket's send loop is handed: an event to shape, or a frame to send as it is.
Queued = Union[  # noqa: UP007
    Pending, ServerHello, EventsFrame, AckFrame, ErrorFrame, ReceiptFrame, EventFrame, RestartFrame
]
