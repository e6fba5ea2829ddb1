"""Agents: the faces a harness takes part in rooms as (docs/adr/0070).

An agent is a participant of kind ``agent`` with its harness behind it. It is in one room
at a time; the door logs where it goes (``agent.attached``, ``agent.released``) and what it
said while it was in none (``message.held``). Registering and attaching are door commands
(:mod:`chips_common.commands`): only Chips writes these events.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from chips_common.events.base import EventBody, Ref, register

AgentState = Literal["active", "archived"]
ReleaseReason = Literal["archived", "deleted", "moved", "agent_archived", "removed"]
AgentName = Field(min_length=1, max_length=80)
# An agent's face (docs/adr/0153): one emoji, or the attachment id (``att_…``) of a picture
# its harness uploaded; checked at the door by ``chips_common.rules.faces``.
FACE_DOC = "one emoji, or the attachment_id (att_…) of a picture its harness uploaded"


@register
class AgentRegistered(EventBody):
    """A harness registered a new agent under a key of its own.

    ``name`` is the name it has: the one asked for, numbered when another participant of
    the workspace has it ("OpenClaw 2"). ``main`` marks the harness's Main agent, which
    stays in its Main room (``space_id``). A copy made for a fork names ``forked_from``
    (the agent copied) and ``fork_of`` (the ask); an agent made for an ask names
    ``made_for``. ``face`` is the face it was given, if any: one emoji, or the
    ``attachment_id`` of a picture its harness uploaded.
    """

    client_writable: ClassVar[bool] = False
    in_space: ClassVar[bool] = False

    type: Literal["agent.registered"] = "agent.registered"
    agent_id: str
    harness_id: str
    key: str = Field(min_length=1, max_length=200)
    name: str = AgentName
    state: AgentState = "active"
    main: bool = False
    space_id: str | None = None
    forked_from: str | None = None
    fork_of: str | None = None
    made_for: str | None = None
    face: str | None = Field(default=None, min_length=1, max_length=100, description=FACE_DOC)


@register
class AgentUpdated(EventBody):
    """An agent was renamed, archived, brought back or given a face (by its harness
    registering it again, or by a person renaming it: then ``name_by`` says who, and the
    name holds). ``face`` is its new face, or ``""`` when its face was taken off."""

    client_writable: ClassVar[bool] = False
    in_space: ClassVar[bool] = False

    type: Literal["agent.updated"] = "agent.updated"
    agent_id: str
    harness_id: str
    name: str | None = Field(default=None, min_length=1, max_length=80)
    state: AgentState | None = None
    name_by: str | None = None
    face: str | None = Field(default=None, max_length=100, description=FACE_DOC + ', or ""')


@register
class AgentAttached(EventBody):
    """One of a harness's agents was put in a room: added by a person, moved in, brought
    back by an unarchive, attached, or joining as a fork's copy or a new agent.

    ``catch_up`` holds the room's last lines before it joined, in context's shape.
    """

    client_writable: ClassVar[bool] = False

    type: Literal["agent.attached"] = "agent.attached"
    space_id: str
    agent_id: str
    harness_id: str
    replacing: str | None = None
    fork_of: str | None = None
    made_for: str | None = None
    catch_up: dict[str, Any] | None = None


@register
class AgentReleased(EventBody):
    """An agent left its room and is free; its runs there were cancelled first."""

    client_writable: ClassVar[bool] = False

    type: Literal["agent.released"] = "agent.released"
    space_id: str
    agent_id: str
    harness_id: str
    reason: ReleaseReason
    moved_to: str | None = None
    delete: bool | None = None


@register
class MembershipReplaced(EventBody):
    """An agent took another's place in a room (``POST /v1/agents/:id/attach``):
    ``replaced`` (an agent of the same harness, or the harness itself) left, and what it said
    there reads as ``participant_id``'s from then on."""

    client_writable: ClassVar[bool] = False

    type: Literal["membership.replaced"] = "membership.replaced"
    space_id: str
    participant_id: str
    replaced: str


@register
class AgentFork(EventBody):
    """A person asked a harness that declared ``forks`` for a copy of ``agent_id`` in the
    room ``space_id``. The harness has a minute from ``ts`` to register it."""

    type: Literal["agent.fork"] = "agent.fork"
    space_id: str
    agent_id: str
    harness_id: str | None = None


@register
class AgentAsked(EventBody):
    """A person asked a harness that declared ``new_agents`` for a new agent in the room
    ``space_id``, called ``name``. The harness has a minute from ``ts`` to register it."""

    type: Literal["agent.asked"] = "agent.asked"
    space_id: str
    harness_id: str
    name: str | None = Field(default=None, min_length=1, max_length=80)
    # Who asked (the door writes it from the actor): a harness answers only an owner or
    # admin of the workspace or its own owner, so it is told which of them it was.
    by: str | None = None


@register
class MessageHeld(EventBody):
    """What an agent said while it was in no room: posted in the next room it joins,
    oldest first. Told to its harness alone."""

    client_writable: ClassVar[bool] = False
    in_space: ClassVar[bool] = False

    type: Literal["message.held"] = "message.held"
    agent_id: str
    harness_id: str
    text: str = Field(default="", max_length=40_000)
    upload_ids: list[Ref] = Field(default_factory=list, max_length=20)
    left_space_id: str | None = None


AGENT_EVENTS = (
    "agent.registered",
    "agent.updated",
    "agent.attached",
    "agent.released",
    "membership.replaced",
    "agent.fork",
    "agent.asked",
    "message.held",
)
