"""Spaces (rooms) and who is in them (docs/product/spaces.md)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from chips_common.events.base import EventBody, Ref, register

# "agents": a harness in the room only behind its agents there (docs/adr/0070); only the
# door writes it.
Standing = Literal["owner", "member", "guest", "agents"]
SpaceState = Literal["open", "closed"]
Title = Field(default=None, min_length=1, max_length=200)


class FollowingHarness(BaseModel):
    """A harness told of an erasure because it declared ``follows_rooms``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    harness_id: str
    delete: bool


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

    A ``thread`` grows from one message (``root_message_id``) of a room
    (``parent_space_id``). It has no members of its own: whoever is in the room is in its
    threads (docs/product/messages.md, Threads).
    """

    type: Literal["space.created"] = "space.created"
    space_id: str | None = None
    kind: Literal["direct", "group", "thread"] = "group"
    title: str | None = Field(default=None, max_length=200)
    members: list[Ref] = Field(default_factory=list, max_length=200)
    home_of: str | None = None
    key: str | None = Field(default=None, min_length=1, max_length=200)
    shared: bool | None = None
    opened_for: str | None = None
    asked_of: str | None = None
    parent_space_id: str | None = None
    root_message_id: str | None = None


@register
class SpaceErased(EventBody):
    """A space was deleted: erased from the server, with its threads (docs/product/spaces.md,
    Deleting one).

    This event is the one line the log keeps in place of everything that was said in the
    room: it names the space and who erased it (the actor), and nothing of what was in it.
    Chips fills in ``threads`` (the ids of the threads erased with it) and ``follows``:
    each harness in the room that declared ``follows_rooms``, with ``delete: true`` when
    the person erasing it owns the harness (delete your side too) and ``false`` otherwise
    (archive it there, for the owner). docs/adr/0010.
    """

    type: Literal["space.erased"] = "space.erased"
    space_id: str
    threads: list[str] | None = None
    follows: list[FollowingHarness] | None = None


@register
class SpaceClaimed(EventBody):
    """A harness took a space as its own under a key, through its door.

    Either a room a person asked of it, or the space another harness opened under a
    ``shared`` key (docs/product/spaces.md, How one is opened). From then on the harness retitles,
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
    who did it (docs/product/spaces.md, Retitling and archiving).
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
    it still retitles and closes it (docs/product/websocket.md, spend ceilings and locks).
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
    # "agents" when the harness that leaves was here only behind its agents (docs/adr/0070):
    # written by Chips itself, as the add's is; such a leave draws no line.
    standing: Literal["agents"] | None = None
