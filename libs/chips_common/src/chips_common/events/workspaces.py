"""Workspace-wide events: a workspace and the participants in it."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from chips_common.events.base import EventBody, register

Name = Field(min_length=1, max_length=80)

# The autonomy dial's settings (docs/adr/0031).
Autonomy = Literal["off", "L0", "L1", "L2", "L3"]
AUTONOMY_LEVELS: tuple[str, ...] = ("off", "L0", "L1", "L2", "L3")
DEFAULT_AUTONOMY = "L1"


@register
class WorkspaceCreated(EventBody):
    """An operator created a workspace; it is the first event of its log."""

    client_writable: ClassVar[bool] = False
    in_space: ClassVar[bool] = False

    type: Literal["workspace.created"] = "workspace.created"
    name: str = Name


@register
class ParticipantJoined(EventBody):
    """A person or a harness became a participant of the workspace.

    A person's role is their standing in the workspace; a harness has an owner, the
    person who connected it. Its token is stored beside the event as a hash, never in it.
    """

    client_writable: ClassVar[bool] = False
    in_space: ClassVar[bool] = False

    type: Literal["participant.joined"] = "participant.joined"
    participant_id: str
    kind: Literal["person", "harness"]
    name: str = Name
    role: Literal["owner", "admin", "member", "guest"] = "member"
    owner_id: str | None = None
    # A harness's autonomy (docs/adr/0031): "off" when it does not take the dial
    # (`chips connect custom --no-dial`), else the level it starts at. Said in its hello.
    autonomy: Autonomy | None = None
    # The invite a person came in by (docs/adr/0125); the door checks its secret.
    invite_id: str | None = Field(default=None, max_length=100)


@register
class HarnessDisconnected(EventBody):
    """A harness's tokens were withdrawn (``chips disconnect NAME``).

    Written by its owner or a workspace owner or admin. From this event on its tokens are
    refused everywhere, and every gateway closes its live sockets as the event goes by.
    """

    in_space: ClassVar[bool] = False

    type: Literal["harness.disconnected"] = "harness.disconnected"
    harness_id: str


# What a harness may declare it does (docs/product/jacobian-channel.md, Connect it;
# docs/product/websocket.md).
Capability = Literal["new_spaces", "follows_rooms", "agents", "forks", "new_agents", "restarts"]
CAPABILITIES: tuple[str, ...] = (
    "new_spaces",
    "follows_rooms",
    "agents",
    "forks",
    "new_agents",
    "restarts",
)


@register
class HarnessDeclared(EventBody):
    """A harness declared what it does; the list replaces what it declared before.

    ``new_spaces``: it may be asked for a room; ``follows_rooms``: it carries archives and
    deletes over to its own side; ``agents``, ``forks``, ``new_agents``, ``restarts``:
    see docs/product/websocket.md. Written by the harness itself or its owner (``chips declare``).
    """

    in_space: ClassVar[bool] = False

    type: Literal["harness.declared"] = "harness.declared"
    harness_id: str
    capabilities: list[Capability] = Field(default_factory=list, max_length=len(CAPABILITIES))


# What a rule of the dial does with an approval it matches (docs/adr/0130).
Effect = Literal["allow", "ask", "deny"]


class PolicyRule(BaseModel):
    """One rule of a harness's owner: ``allow``, ``ask`` (always ask) or ``deny`` an approval
    whose action matches ``action`` and, when given, whose ``args`` match ``args``.

    Both are patterns where ``*`` stands for anything (``jacobian.shell.*``, ``ls *``);
    without ``*`` a pattern is the exact text.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: str = Field(min_length=1, max_length=200)
    args: str | None = Field(default=None, min_length=1, max_length=2000)
    effect: Effect


@register
class HarnessPolicySet(EventBody):
    """A harness's owner set its autonomy dial, its rules, or both (docs/adr/0130).

    ``autonomy`` left out keeps the level; ``rules`` left out keeps the rules, and a list
    replaces them (an empty one clears them). Only the harness's owner writes it.
    """

    in_space: ClassVar[bool] = False

    type: Literal["harness.policy_set"] = "harness.policy_set"
    harness_id: str
    autonomy: Autonomy | None = None
    rules: list[PolicyRule] | None = Field(default=None, max_length=100)

    @model_validator(mode="after")
    def _sets_something(self) -> HarnessPolicySet:
        if self.autonomy is None and self.rules is None:
            raise ValueError("say the autonomy, the rules, or both")
        return self
