"""The answer to a write: the socket's ``ack`` frame and ``POST /v1/events``' body.

One model for both, so the two answers cannot drift, and the OpenAPI and AsyncAPI
documents describe it from the same type. An ack names what its write created (the
space of a ``space.created``, the message of a ``message.post``), so a client never has
to read the log back to learn an id Chips made (docs/protocol.md, Writing).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from chips_common.append import AppendAnswer
from chips_common.events import LoggedJson
from chips_common.events.wire import event_json
from chips_common.rules.exchanges import held_ack
from chips_gateway.frames import AckFrame

# The id each logged event creates, by type: the field it is named by in the ack. The
# door fills these in (a space.created's space_id when the client left it out, every
# message's message_id, the id of an agent a command registers).
CREATES: dict[str, str] = {
    "space.created": "space_id",
    "message.post": "message_id",
    "agent.registered": "agent_id",
}


class Exchange(BaseModel):
    """Where a held post leaves the room's exchange: ``count`` so far, of ``allowance``."""

    count: int | None = None
    allowance: int | None = None


class Ack(BaseModel):
    """A write is in the log: its ``seq`` (null when the door logged nothing)."""

    model_config = ConfigDict(title="Ack")

    idempotency_key: str
    seq: int | None = Field(description="the last event the write logged, or null")
    duplicate: bool = Field(description="the key was sent before: this is its first answer")
    trace_id: str | None = None
    held: bool | None = Field(default=None, description="the referee held the post")
    exchange: Exchange | None = None
    space_id: str | None = Field(default=None, description="the space the write created")
    message_id: str | None = Field(default=None, description="the message the write posted")
    agent_id: str | None = Field(default=None, description="the agent the write registered")


def created(events: list[LoggedJson]) -> dict[str, str]:
    """The ids the logged ``events`` created, by the name an ack gives each."""
    found: dict[str, str] = {}
    for event in events:
        name = CREATES.get(str(event.get("type")))
        if name is not None and isinstance(event.get(name), str):
            found[name] = event[name]
    return found


def ack_of(key: str, answer: AppendAnswer, trace_id: str | None) -> Ack:
    """The ack of an answered write; only the fields that apply are set."""
    ack = Ack(
        idempotency_key=key,
        seq=answer.seqs[-1] if answer.seqs else None,
        duplicate=answer.duplicate,
    )
    # Each field set below is one the ack sends (``exclude_unset``); the rest it leaves out.
    if trace_id:
        ack.trace_id = trace_id
    held = held_ack(event_json(answer.events[-1]) if answer.events else None)
    if "held" in held:
        ack.held = held["held"]
    if "exchange" in held:
        ack.exchange = Exchange.model_validate(held["exchange"])
    for name, value in created(answer.events).items():
        setattr(ack, name, value)
    return ack


def ack_frame(ack: Ack) -> AckFrame:
    """The socket's ``ack`` frame of an ack."""
    return {"frame": "ack", **ack.model_dump(exclude_unset=True)}  # type: ignore[typeddict-item]
