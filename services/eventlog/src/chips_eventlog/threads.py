"""Threads at the door (spec/messages.md, Threads).

A thread is a space with a parent room and the message it grew from, and no members of
its own: whoever is in the room is in its threads. So every standing the door reads for a
thread is its room's (:func:`room_of`), and the room operations that would give a thread
members or a title of its own are refused (:func:`refuse_room_operation`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, func, insert, select
from sqlalchemy.sql.elements import ColumnElement

from chips_common.append import Actor
from chips_common.db import tables as t
from chips_common.events import (
    EventBody,
    MembershipAdded,
    MembershipRemoved,
    SpaceCreated,
    SpaceLockSet,
    SpaceUpdated,
)
from chips_common.ids import new_id

if TYPE_CHECKING:
    from chips_eventlog.door import Door

# What a thread refuses: it has no members, title, archive or lock of its own.
ROOM_OPERATIONS = (MembershipAdded, MembershipRemoved, SpaceUpdated, SpaceLockSet)


def room_of(space_id: str) -> ColumnElement[Any]:
    """The space whose members are in ``space_id``: its room for a thread, else itself."""
    parent = select(t.spaces.c.parent_space_id).where(t.spaces.c.id == space_id).scalar_subquery()
    return func.coalesce(parent, space_id)


async def refuse_room_operation(door: Door, body: EventBody, actor: Actor) -> None:
    """A thread's members, title and state are its room's; change those in the room."""
    if not isinstance(body, ROOM_OPERATIONS) or not await is_thread(door, body.space_id):
        return
    from chips_eventlog.door import Refused

    await door.check_member(body.space_id, actor)  # a stranger learns nothing more
    raise Refused(
        "invalid_event",
        "a thread has no members, title or state of its own; change its room instead",
        "space_id",
    )


def is_thread_event(body: SpaceCreated) -> bool:
    """A ``space.created`` the thread rule decides (one naming a parent or a root too)."""
    return body.kind == "thread" or body.parent_space_id is not None or bool(body.root_message_id)


async def is_thread(door: Door, space_id: str) -> bool:
    row = (
        await door.conn.execute(
            select(t.spaces.c.kind).where(
                and_(t.spaces.c.id == space_id, t.spaces.c.workspace_id == door.workspace_id)
            )
        )
    ).first()
    return row is not None and row.kind == "thread"


async def check_thread_created(door: Door, body: SpaceCreated, actor: Actor) -> dict[str, Any]:
    """``space.created`` with ``kind: "thread"``: grown from one message of a room.

    Anybody in the room may open one (a thread is talk). Not inside a thread, not in a
    closed space, not from a message taken back, and one thread per message.
    """
    from chips_eventlog.door import Refused

    if body.kind != "thread":
        raise Refused(
            "invalid_event", "only a thread has a parent and a root message", "parent_space_id"
        )
    if body.parent_space_id is None or body.root_message_id is None:
        raise Refused("invalid_event", "a thread names its parent_space_id and its root_message_id")
    if body.members or body.home_of or body.asked_of or body.key or body.shared is not None:
        raise Refused(
            "invalid_event", "a thread has no members of its own: whoever is in its room is in it"
        )
    if body.opened_for is not None:
        raise Refused("invalid_event", "opened_for is filled in by Chips", "opened_for")
    await door.check_member(body.parent_space_id, actor)
    parent = await door.space(body.parent_space_id)
    if parent is None:
        raise Refused("forbidden", "you are not a member of this space", "parent_space_id")
    if parent.kind == "thread":
        raise Refused("invalid_event", "a thread is not opened inside a thread", "parent_space_id")
    if parent.state != "open":
        raise Refused(
            "invalid_event", "a thread is not opened in a closed space", "parent_space_id"
        )
    from chips_eventlog.words import find  # words is imported by the door, as this is

    root = await find(door, body.root_message_id)
    if root is None or root.space_id != parent.id:
        raise Refused(
            "not_found", "root_message_id names no message of that room", "root_message_id"
        )
    if root.deleted:  # a message taken back takes no thread (spec/messages.md)
        raise Refused(
            "invalid_event", "a thread is not opened from a message taken back", "root_message_id"
        )
    taken = (
        await door.conn.execute(
            select(t.spaces.c.id).where(
                and_(
                    t.spaces.c.workspace_id == door.workspace_id,
                    t.spaces.c.root_message_id == body.root_message_id,
                )
            )
        )
    ).first()
    if taken is not None:
        raise Refused("invalid_event", "that message roots a thread already", "root_message_id")
    space_id = body.space_id or new_id("spc")
    if not space_id.startswith("spc_"):
        raise Refused("invalid_event", "a space's id starts with spc_", "space_id")
    exists = (
        await door.conn.execute(select(t.spaces.c.id).where(t.spaces.c.id == space_id))
    ).first()
    if exists:
        raise Refused("invalid_event", "that space already exists", "space_id")
    await door.conn.execute(
        insert(t.spaces).values(
            id=space_id,
            workspace_id=door.workspace_id,
            kind="thread",
            title=body.title,
            created_by=actor.id,
            created_seq=door.head_seq + 1,
            parent_space_id=parent.id,
            root_message_id=body.root_message_id,
        )
    )
    return {"space_id": space_id}
