"""Spaces (rooms) and who is in them (spec/spaces.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from chips_common.events.base import EventBody, register

Standing = Literal["owner", "member", "guest"]


@register
class SpaceCreated(EventBody):
    """A space was opened. Whoever opens it is its first member, as its owner.

    ``members`` are the others it opens with (a direct space holds the harness); Chips
    fills in ``space_id`` when the client leaves it out.
    """

    type: Literal["space.created"] = "space.created"
    space_id: str | None = None
    kind: Literal["direct", "group"] = "group"
    title: str | None = Field(default=None, max_length=200)
    members: list[str] = Field(default_factory=list, max_length=200)


@register
class MembershipAdded(EventBody):
    """A participant was added to a space."""

    type: Literal["membership.added"] = "membership.added"
    space_id: str
    participant_id: str
    standing: Standing = "member"


@register
class MembershipRemoved(EventBody):
    """A participant left a space, or was taken out of it."""

    type: Literal["membership.removed"] = "membership.removed"
    space_id: str
    participant_id: str
