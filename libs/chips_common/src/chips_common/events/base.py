"""The base of the event catalogue: one registry, one decoder.

Each event type is a frozen pydantic model whose ``type`` literal is the name the product pages
gives it. Registering a name twice fails at import. ``parse_event`` is the only way
a dict becomes an event body; it raises :class:`InvalidEvent` naming the first bad
field, which the door turns into an ``invalid_event`` error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

# Fields Chips fills in itself; a client may not send them (docs/product/websocket.md, Writing).
ENVELOPE_FIELDS = frozenset({"v", "id", "seq", "ts", "workspace_id", "actor"})

PROTOCOL_VERSION = 1

# A participant's, a space's or a message's id inside a list: bounded, as every string in
# an event is (the gateway also bounds an event's whole size).
Ref = Annotated[str, Field(max_length=100)]
EVENT_VERSION = 1


# The order an event's fields are written in on the wire, whatever storage did to them,
# so that a replayed event and a live one are the same bytes.
ENVELOPE_ORDER = ("v", "id", "seq", "ts", "workspace_id", "actor", "type", "space_id")


# A logged event as JSON: its envelope and its type's fields, as the events table keeps it
# (a JSONB body) and as it is published and sent, byte for byte. Its fields are typed by
# its type's model here, where it is decoded (``parse_event``) before a rule reads it; the
# services that store it, publish it or send it on read only its envelope (``seq``,
# ``id``, ``type``, ``space_id``, ``actor``) and pass the rest on unread. The one alias of
# an untyped dict the code may use, counted on its own by scripts/count_untyped.py
# (docs/adr/0150).
LoggedJson = dict[str, Any]

# A JSON object passed on, or read with a check of each value's type: a real recursive
# type, not ``Any``.
JsonObject = dict[str, JsonValue]


def canonical(event: Mapping[str, object]) -> LoggedJson:
    """The event with the envelope first, in a fixed order, and its own fields sorted."""
    ordered = {k: event[k] for k in ENVELOPE_ORDER if k in event}
    ordered.update(sorted((k, v) for k, v in event.items() if k not in ordered))
    return ordered


class InvalidEvent(ValueError):
    """An event that does not fit the catalogue; ``field`` names what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class FieldProblem(ValueError):
    """A model's own check failing on one field: raise it from a validator to name it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class EventBody(BaseModel):
    """Fields of one event type, without the envelope."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)

    # Whether clients may write this type over HTTP or the socket. Types that only
    # Chips itself writes (a workspace being created, a token being issued) say False.
    client_writable: ClassVar[bool] = True
    # Whether the event belongs to a space (and so needs a space_id and membership).
    in_space: ClassVar[bool] = True

    type: str


CATALOGUE: dict[str, type[EventBody]] = {}

T = TypeVar("T", bound=type[EventBody])


def register(cls: T) -> T:
    """Class decorator adding an event type to the catalogue, once."""
    name = cls.__pydantic_fields__["type"].default
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__name__} must give its type a literal default")
    if name in CATALOGUE:
        raise TypeError(f"event type {name!r} is registered twice")
    CATALOGUE[name] = cls
    return cls


def _first_error(exc: ValidationError) -> InvalidEvent:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"]) or "event"
    kind = err["type"]
    if kind == "extra_forbidden":
        message = f"{field} is not a field of this event"
    elif kind == "missing":
        message = f"{field} is required"
    elif kind == "value_error" and "error" in err.get("ctx", {}):
        # A model's own check (a validator) says its reason as a whole sentence.
        problem = err["ctx"]["error"]
        message = str(problem)
        if isinstance(problem, FieldProblem):
            prefix = field + "." if field != "event" else ""
            field = prefix + problem.field
    else:
        message = f"{field}: {err['msg']}"
    return InvalidEvent(field, message)


def parse_event(data: Any) -> EventBody:
    """Decode the type-specific part of an event, refusing anything the catalogue lacks."""
    if not isinstance(data, dict):
        raise InvalidEvent("event", "an event is a JSON object")
    name = data.get("type")
    if not isinstance(name, str) or not name:
        raise InvalidEvent("type", "type is required")
    cls = CATALOGUE.get(name)
    if cls is None:
        raise InvalidEvent("type", f"unknown event type {name!r}")
    for key in ENVELOPE_FIELDS:
        if key in data:
            raise InvalidEvent(key, f"{key} is filled in by Chips; leave it out")
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise _first_error(exc) from None
