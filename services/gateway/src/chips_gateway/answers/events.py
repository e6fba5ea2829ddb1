"""What the routes that read the log answer: events and a room's context."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from chips_gateway.answers.base import Answer, absent


class EventActor(Answer):
    kind: Literal["person", "harness", "agent", "system", "operator"]
    id: str
    harness_id: str | None = Field(default=None, description="an agent's harness")


class LoggedEvent(Answer):
    """A logged event: the envelope Chips fills in, then the body of its ``type``, whose
    fields are the catalogue's (``EventWrite`` and docs/protocol/schemas/), with what
    delivery adds (a message's ``message_id``, linked ``attachments``)."""

    v: int
    id: str
    seq: int
    ts: str
    workspace_id: str
    actor: EventActor
    type: str
    space_id: str | None = absent()


class EventPage(Answer):
    """``GET /v1/events``: the events after ``since``, and where to read on from."""

    events: list[LoggedEvent]
    next_since: int


class ContextLine(Answer):
    """A line of a room as a harness is told it (a ``message.new``'s context)."""

    seq: int


class ContextPage(Answer):
    lines: list[ContextLine]
    truncated: bool
    before: int
