"""Spaces (rooms) and who is in them (spec/spaces.md)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from chips_common.events.base import EventBody, register

Standing = Literal["owner", "member", "guest"]
SpaceState = Literal["open", "closed"]
Title = Field(default=None, min_length=1, max_length=200)


@register
class SpaceCreated(EventBody):
    """A space was opened. Whoever opens it is its first member, as its owner.

    ``members`` are the others it opens with (a direct space holds the harness); Chips
    fills in ``space_id`` when the client leaves it out. ``home_of`` marks the direct
    space a harness is handed when it is connected: its home, never archived.

    A harness opens a space only through its door (``POST /v1/harnesses/:id/spaces``):
    then the space carries the harness's ``key`` (``shared`` when another harness may
    work in it too), and it is opened for the harness's owner, ``opened_for``, who owns
    it; the harness is a member.

    A person may open a room ``asked_of`` a harness that declared ``new_spaces``: the
    harness is put in it and claims it through its door (``space.claimed``).
    """

    type: Literal["space.created"] = "space.created"
    space_id: str | None = None
    kind: Literal["direct", "group"] = "group"
    title: str | None = Field(default=None, max_length=200)
    members: list[str] = Field(default_factory=list, max_length=200)
    home_of: str | None = None
    key: str | None = Field(default=None, min_length=1, max_length=200)
    shared: bool | None = None
    opened_for: str | None = None
    asked_of: str | None = None


@register
class SpaceClaimed(EventBody):
    """A harness took a space as its own under a key, through its door.

    Either a room a person asked of it, or the space another harness opened under a
    ``shared`` key (spec/spaces.md, How one is opened). From then on the harness retitles,
    archives and unarchives it as a space it opened.
    """

    client_writable: ClassVar[bool] = False

    type: Literal["space.claimed"] = "space.claimed"
    space_id: str
    key: str = Field(min_length=1, max_length=200)
    shared: bool = False


@register
class SpaceUpdated(EventBody):
    """A space was retitled, archived (``state: "closed"``) or unarchived (``"open"``).

    At least one of ``title`` and ``state`` is given; the room shows a muted line saying
    who did it (spec/spaces.md, Retitling and archiving).
    """

    type: Literal["space.updated"] = "space.updated"
    space_id: str
    title: str | None = Title
    state: SpaceState | None = None

    @model_validator(mode="after")
    def _changes_something(self) -> SpaceUpdated:
        if self.title is None and self.state is None:
            raise ValueError("space.updated gives a new title, a state, or both")
        return self


@register
class SpaceLockSet(EventBody):
    """A room's changes were locked or unlocked (``POST /v1/spaces/:id/lock``).

    While locked no person renames, archives or deletes the room; the harness that opened
    it still retitles and closes it (spec/websocket.md, spend ceilings and locks).
    """

    type: Literal["space.lock_set"] = "space.lock_set"
    space_id: str
    locked: bool


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
