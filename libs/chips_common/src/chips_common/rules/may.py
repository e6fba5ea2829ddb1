"""What a person may do in a room, and on its cards: one rule for the door and the app.

The eventlog's door decides each act with these functions (a refusal is the :class:`No`
they answer), and the gateway answers ``GET /v1/spaces/:id/may`` by asking them the same
question for the reader, so what the app offers and what the door takes cannot disagree
(docs/adr/0142). Each function reads plain facts (the room, the person's standing in it and
role in the workspace), never a store, so both sides gather the facts from their own state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from chips_common.rules.deciders import may_decide

ADMINS = ("owner", "admin")
# A run that takes an answer is running or paused.
LIVE = ("running", "paused")
# A harness here only behind its agents (docs/adr/0070): it goes when they do.
BEHIND = "agents"


@dataclass(frozen=True)
class No:
    """Why the door refuses an act: the code and sentence the client gets, and the field."""

    code: str
    message: str
    field: str | None = None


@dataclass(frozen=True)
class Room:
    """What the rules read of a room. ``key``: the key a harness opened it by."""

    kind: str
    state: str
    locked: bool
    home_of: str | None = None
    key: str | None = None


def admin(role: str | None) -> bool:
    """Whether a workspace role is an owner's or an admin's."""
    return role in ADMINS


# --- the room's own changes ---------------------------------------------------------------


def thread_change(room: Room) -> No | None:
    """A thread has no members, title, state or lock of its own: those are its room's."""
    if room.kind == "thread":
        return No(
            "invalid_event",
            "a thread has no members, title or state of its own; change its room instead",
            "space_id",
        )
    return None


def person_change(room: Room, standing: str) -> No | None:
    """A person's rename, archive or unarchive: never a guest's, nor while locked."""
    if standing == "guest":
        return No("forbidden", "a guest may talk and leave, not retitle or archive")
    if room.locked:
        return No("forbidden", "this room's changes are locked; unlock it to rename or archive it")
    return None


def state_change(room: Room, state: str | None) -> No | None:
    """Archiving (``closed``) or unarchiving (``open``), by whoever may change the room: a
    harness's home is never archived, and a room is not put where it is already."""
    if state == "closed" and room.home_of is not None:
        return No("forbidden", "a harness's home is never archived", "state")
    if state is not None and state == room.state:
        already = "archived" if room.state == "closed" else "open"
        return No("invalid_event", f"this space is {already} already", "state")
    return None


def lock_change(room: Room, standing: str, role: str | None, locked: bool) -> No | None:
    """Locking a room's changes, or unlocking them: its owner's, or a workspace's."""
    if standing != "owner" and not admin(role):
        return No(
            "forbidden", "only the room's owner, or a workspace owner or admin, locks its changes"
        )
    if locked == room.locked:
        already = "locked" if room.locked else "not locked"
        return No("invalid_event", f"the room's changes are {already} already", "locked")
    return None


def erase(room: Room, standing: str, role: str | None) -> No | None:
    """A person's delete: the room's owner's or a workspace's, never a home's, nor while
    locked; a thread goes with its room. See :func:`archives_instead`."""
    if room.kind == "thread":
        return No("invalid_event", "a thread goes with its room: delete the room", "space_id")
    if standing != "owner" and not admin(role):
        return No("forbidden", "only the room's owner, or a workspace owner or admin, deletes it")
    if room.home_of is not None:
        return No("forbidden", "a harness's home is never deleted")
    if room.locked:
        return No("forbidden", "this room's changes are locked; unlock it to delete it")
    return None


def archives_instead(room: Room) -> bool:
    """Whether deleting the room archives it instead: a direct room nobody could open
    again (no harness's key names it)."""
    return room.kind == "direct" and room.key is None


def archive_instead(room: Room) -> No | None:
    """A delete that archives instead takes a room that is not archived already."""
    if room.state == "closed":
        return No(
            "invalid_event",
            "nobody could open this direct space again, so it is archived rather than "
            "deleted, and it is archived already",
        )
    return None


# --- who is in it -------------------------------------------------------------------------


def add(standing: str) -> No | None:
    """Adding somebody: a member's or owner's, not a guest's."""
    if standing == "guest":
        return No("forbidden", "a guest may talk and leave, not add anyone")
    return None


def remove(standing: str, me: str, whom: str) -> No | None:
    """Taking somebody out: anybody leaves; only the room's owner takes others out."""
    if whom != me and standing != "owner":
        return No("forbidden", "only the space's owner takes others out of it")
    return None


def removable(whom_standing: str, main_agent: bool, name: str) -> No | None:
    """Whether a member can be taken out at all: a harness here only behind its agents
    goes with them, and a Main agent stays in its Main room."""
    if whom_standing == BEHIND:
        return No(
            "invalid_event",
            "that harness is here only behind its agents: take them out instead",
            "participant_id",
        )
    if main_agent:
        return No(
            "lead_room", f"{name} is the Main agent: it stays in its Main room", "participant_id"
        )
    return None


def harness_entry(main_room: bool) -> No | None:
    """A Main room takes people and no other agent or harness (docs/adr/0071)."""
    if main_room:
        return No(
            "lead_room", "this is a Main room: it takes people and no other agent", "participant_id"
        )
    return None


def agent_entry(
    name: str, *, active: bool, main: bool, main_home_here: bool, room: Room, main_room: bool
) -> No | None:
    """Whether an agent may enter a room (docs/adr/0071): an active one, into a room and
    not a thread, not while the room is archived; a Main agent only into its Main room,
    which takes no other agent. Where it is now is the door's to weigh (a move)."""
    if not active:
        return No(
            "invalid_event",
            f"{name} is archived: its harness registers it active to bring it back",
            "agent_id",
        )
    if room.kind == "thread":
        return No("invalid_event", "an agent joins a room, not one of its threads", "space_id")
    if room.state != "open":
        return No(
            "room_closed",
            "this room is archived: unarchive it before an agent joins it",
            "space_id",
        )
    if main:
        if not main_home_here:
            return No(
                "lead_room",
                f"{name} is its harness's Main agent: it stays in its Main room",
                "space_id",
            )
    elif main_room:
        return No(
            "lead_room", "this is a Main room: it takes people and no other agent", "space_id"
        )
    return None


# --- lines --------------------------------------------------------------------------------


def pin(standing: str) -> No | None:
    """Anyone in the room but a guest pins a standing message, and lets it go."""
    if standing == "guest":
        return No("forbidden", "a guest does not pin messages", "message_id")
    return None


def take_back(standing: str, role: str | None, mine: bool) -> No | None:
    """A message is taken back by its author, the room's owner, or a workspace's."""
    if not mine and standing != "owner" and not admin(role):
        return No(
            "forbidden",
            "a message is taken back by its author, the room's owner, "
            "or a workspace owner or admin",
            "message_id",
        )
    return None


# --- what the reader may do, all at once ----------------------------------------------------


@dataclass(frozen=True)
class Member:
    """Somebody in the room, as the rules of taking them out read them."""

    id: str
    standing: str
    name: str = ""
    main_agent: bool = False


@dataclass(frozen=True)
class Candidate:
    """Somebody in the workspace not in the room, as the rules of adding them read them."""

    id: str
    kind: str
    name: str = ""
    active: bool = True
    main: bool = False
    main_home_here: bool = False


Delete = Literal["erase", "archive"] | None


@dataclass(frozen=True)
class RoomActs:
    """What a person may do in a room, each act decided by the rule the door decides it by.

    ``delete`` is ``erase`` when a delete erases the room, ``archive`` when it archives a
    direct room nobody could open again instead, None when the door would refuse it.
    ``take_back``: taking back somebody else's message (their own is always theirs).
    ``remove``: who they may take out (themselves: leaving); ``add``: who they may add.
    """

    rename: bool
    archive: bool
    unarchive: bool
    lock: bool
    unlock: bool
    delete: Delete
    pause: bool
    pin: bool
    take_back: bool
    remove: tuple[str, ...]
    add: tuple[str, ...]


NOTHING = RoomActs(False, False, False, False, False, None, False, False, False, (), ())


def delete_act(room: Room, standing: str, role: str | None) -> Delete:
    """What the door makes of a delete: an erasure, an archive instead, or a refusal (the
    archive instead is decided then as a person's archive)."""
    if erase(room, standing, role) is not None:
        return None
    if not archives_instead(room):
        return "erase"
    refused = archive_instead(room) or person_change(room, standing) or state_change(room, "closed")
    return None if refused else "archive"


def room_acts(
    room: Room,
    me: str,
    standing: str | None,
    role: str | None,
    members: Sequence[Member] = (),
    others: Sequence[Candidate] = (),
    main_room: bool = False,
) -> RoomActs:
    """What a person (``me``) with ``standing`` in the room (None: not in it) and ``role``
    in the workspace may do there, asking each rule what the door would answer."""
    if standing is None:
        return NOTHING
    thread = thread_change(room)
    changes = thread is None and person_change(room, standing) is None
    adds = thread is None and add(standing) is None
    return RoomActs(
        rename=changes,
        archive=changes and state_change(room, "closed") is None,
        unarchive=changes and state_change(room, "open") is None,
        lock=thread is None and lock_change(room, standing, role, True) is None,
        unlock=thread is None and lock_change(room, standing, role, False) is None,
        delete=delete_act(room, standing, role),
        pause=True,
        pin=pin(standing) is None,
        take_back=take_back(standing, role, mine=False) is None,
        remove=tuple(
            m.id
            for m in members
            if thread is None
            and remove(standing, me, m.id) is None
            and removable(m.standing, m.main_agent, m.name) is None
        ),
        add=tuple(c.id for c in others if adds and entry(c, room, main_room) is None),
    )


def entry(who: Candidate, room: Room, main_room: bool) -> No | None:
    """Whether somebody not in the room may be added to it (a person always)."""
    if who.kind == "harness":
        return harness_entry(main_room)
    if who.kind == "agent":
        return agent_entry(
            who.name,
            active=who.active,
            main=who.main,
            main_home_here=who.main_home_here,
            room=room,
            main_room=main_room,
        )
    return None


# --- cards --------------------------------------------------------------------------------


def expired(expires_at: datetime | None, now: datetime) -> bool:
    """Whether a card's ``expires_at`` has come (refused at the instant itself)."""
    return expires_at is not None and expires_at <= now


def live(run_state: str | None) -> bool:
    """Whether the run that asked still takes an answer (a run not known is taken as live)."""
    return run_state is None or run_state in LIVE


CardState = Literal["open", "theirs", "answered", "expired", "ended"]


@dataclass(frozen=True)
class Card:
    """What the rules read of an approval or question card."""

    kind: Literal["approval", "question"]
    answered: bool
    expires_at: datetime | None
    run_state: str | None
    owner_id: str | None = None
    answerers: Sequence[str] = ()


def card_state(card: Card, person: str, in_room: bool, now: datetime) -> CardState:
    """Where a card stands for a person: ``open`` when they may answer it now, ``theirs``
    when it is still open but somebody else's, else why nobody may (answered first, expired,
    or the run that asked ended)."""
    if card.answered:
        return "answered"
    if expired(card.expires_at, now):
        return "expired"
    if not live(card.run_state):
        return "ended"
    if not in_room:
        return "theirs"
    if card.kind == "approval" and not may_decide(person, card.owner_id, card.answerers):
        return "theirs"
    return "open"
