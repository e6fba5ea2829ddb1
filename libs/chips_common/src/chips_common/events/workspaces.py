"""Workspace-wide events: a workspace and the participants in it."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from chips_common.events.base import EventBody, register

Name = Field(min_length=1, max_length=80)

# The autonomy dial's settings (docs/adr/0031-the-autonomy-dial-and-disconnecting.md).
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


@register
class HarnessDisconnected(EventBody):
    """A harness's tokens were withdrawn (``chips disconnect NAME``).

    Written by its owner or a workspace owner or admin. From this event on its tokens are
    refused everywhere, and every gateway closes its live sockets as the event goes by.
    """

    in_space: ClassVar[bool] = False

    type: Literal["harness.disconnected"] = "harness.disconnected"
    harness_id: str


# What a harness may declare it does (spec/jacobian-channel.md, Connect it; websocket.md).
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
    see spec/websocket.md. Written by the harness itself or its owner (``chips declare``).
    """

    in_space: ClassVar[bool] = False

    type: Literal["harness.declared"] = "harness.declared"
    harness_id: str
    capabilities: list[Capability] = Field(default_factory=list, max_length=len(CAPABILITIES))
