"""What the participant and harness routes answer: the directory, a harness's rooms,
its capabilities, policy and restarts."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict

from chips_common.events.agents import AgentState
from chips_common.events.workspaces import Autonomy, Capability, PolicyRule
from chips_gateway.acks import Ack
from chips_gateway.answers.base import Answer, absent


class Participant(Answer):
    participant_id: str
    kind: str
    name: str
    role: str | None
    owner_id: str | None
    capabilities: list[str] | None
    active: bool | None = absent("false for a deactivated person")
    harness_id: str | None = absent()
    harness: str | None = None
    key: str | None = None
    state: AgentState | None = absent()
    main: bool | None = absent()
    space_id: str | None = None
    held: int | None = absent("a free agent's words that wait")
    name_by: str | None = absent()
    status: str | None = absent("a harness's face")
    restart_asked_at: str | None = absent()
    last_seen_at: str | None = None
    face: str | None = absent("an agent's face: one emoji, or a picture's attachment_id")
    face_url: str | None = absent("a picture face's URL, signed for the reader")


class Directory(Answer):
    """``GET /v1/participants``: who is in the workspace, as the caller is told."""

    as_of_seq: int
    participants: list[Participant]


class OpenedSpace(Answer):
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


class OpenerSpace(Answer):
    """A space a harness opened by key; one it is no longer in shows only what names it,
    the rest null."""

    space_id: str
    key: str | None
    shared: bool | None
    title: str | None
    state: str | None
    open: bool | None
    moved_by: str | None
    moved_seq: int | None
    member: bool


class AskedSpace(Answer):
    space_id: str
    title: str | None
    state: str
    asked_by: str
    asked_seq: int


class HarnessSpaces(Answer):
    as_of_seq: int
    spaces: list[OpenerSpace]
    asked: list[AskedSpace]


class Declared(Ack):
    model_config = ConfigDict(title="Declared")

    harness_id: str
    capabilities: list[Capability]


class Disconnected(Ack):
    model_config = ConfigDict(title="Disconnected")

    harness_id: str


class Policy(Answer):
    harness_id: str
    autonomy: Autonomy
    rules: list[PolicyRule] | None


class PolicySet(Ack):
    model_config = ConfigDict(title="PolicySet")

    harness_id: str
    autonomy: Autonomy
    rules: list[PolicyRule] | None


class RestartAsked(Answer):
    harness_id: str
    asked_by: str
    asked_at: str
    sockets: int
    status: Literal["restarting"]


class HarnessStatus(Answer):
    harness_id: str
    status: str
