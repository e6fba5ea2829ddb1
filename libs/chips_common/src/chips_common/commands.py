"""Requests to the eventlog's door that are not events (docs/adr/0007).

An append request usually carries events as the client wrote them. A command instead asks
the door to decide *which* events to log, against the door state, inside the append
transaction: the harness door ("open the space for this key") may log a new space, a
join, a retitle, a claim, or nothing at all. Only Chips's own endpoints send commands;
they carry ``command`` where an event carries ``type``, so a client's event can never be
read as one (``parse_event`` refuses the field), and they are never logged themselves.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class OpenSpace(BaseModel):
    """``POST /v1/harnesses/:id/spaces``: a harness opens, finds or claims its space by key.

    docs/product/spaces.md, How one is opened: the key is unique in the workspace; the same key
    finds the same space; a ``shared`` key lets a second harness join the first one's
    space; a new title retitles unless a person renamed it; ``space_id`` claims a room a
    person asked of the harness.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: Literal["harness.open_space"] = "harness.open_space"
    key: str = Field(min_length=1, max_length=200)
    title: str | None = Field(default=None, min_length=1, max_length=200)
    shared: bool = False
    space_id: str | None = None


class RegisterAgent(BaseModel):
    """``POST /v1/harnesses/:id/agents``: a harness registers one of its agents by key
    (docs/adr/0070). The same key again is the same agent: renamed when the name changed
    (unless a person renamed it), archived or brought back as ``state`` says."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: Literal["agent.register"] = "agent.register"
    harness_id: str = Field(max_length=100)
    key: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=80)
    # The harness's Main agent (its lead), which stays in its Main room.
    lead: bool = False
    state: Literal["active", "archived"] = "active"
    forked_from: str | None = Field(default=None, max_length=100)
    made_for: str | None = Field(default=None, max_length=100)
    space_id: str | None = Field(default=None, max_length=100)
    # Its face (docs/adr/0153): one emoji, or the attachment id of a picture the harness
    # uploaded; "" takes it off, None keeps the one it has.
    face: str | None = Field(default=None, max_length=100)


class AttachAgent(BaseModel):
    """``POST /v1/agents/:id/attach``: a harness puts one of its agents in a room, in the
    place of another of its agents there or of the harness itself (``replacing``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: Literal["agent.attach"] = "agent.attach"
    agent_id: str = Field(max_length=100)
    space_id: str = Field(max_length=100)
    replacing: str | None = Field(default=None, max_length=100)


class MoveAgent(BaseModel):
    """``POST /v1/agents/:id/move``: a person moves an agent from the room it is in (if
    any) to another (docs/adr/0071). Its runs in the room it leaves are cancelled."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: Literal["agent.move"] = "agent.move"
    agent_id: str = Field(max_length=100)
    space_id: str = Field(max_length=100)


class RenameAgent(BaseModel):
    """``PATCH /v1/agents/:id``: a person renames an agent; the name then holds over the
    one its harness registers it under (``name_by``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: Literal["agent.rename"] = "agent.rename"
    agent_id: str = Field(max_length=100)
    name: str = Field(min_length=1, max_length=80)


class GiveAgents(BaseModel):
    """Chips gives every harness of the workspace that speaks agents and has none of its own
    the agent it is owed in each room it stands in as itself (docs/adr/0146): how rooms from
    before that rule are brought over, in the log. Only Chips sends it (``system``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: Literal["agents.give"] = "agents.give"
