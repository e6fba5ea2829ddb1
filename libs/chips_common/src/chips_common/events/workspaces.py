"""Workspace-wide events: a workspace and the participants in it."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from chips_common.events.base import EventBody, register

Name = Field(min_length=1, max_length=80)


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
