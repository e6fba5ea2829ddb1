"""Threads at the door (docs/product/messages.md, Threads).

A thread is a space with a parent room and the message it grew from, and no members of
its own: whoever is in the room is in its threads. So every standing the door reads for a
thread is its room's (``DoorState.room_of``), and the room operations that would give a
thread members or a title of its own are refused (:func:`refuse_room_operation`).
"""

from __future__ import annotations

from chips_common.append import Actor
from chips_common.events import (
    EventBody,
    MembershipAdded,
    MembershipRemoved,
    SpaceCreated,
    SpaceLockSet,
    SpaceUpdated,
)
from chips_common.ids import new_id
from chips_common.rules import may
from chips_eventlog.refused import refuse, refuse_if
from chips_eventlog.rules.common import Ctx, check_member, room_facts
from chips_eventlog.state import Decision, DoorState, PutSpace, Space

# What a thread refuses: it has no members, title, archive or lock of its own.
ROOM_OPERATIONS = (MembershipAdded, MembershipRemoved, SpaceUpdated, SpaceLockSet)


def refuse_room_operation(s: DoorState, body: EventBody, actor: Actor) -> None:
    """A thread's members, title and state are its room's; change those in the room."""
    if not isinstance(body, ROOM_OPERATIONS):
        return
    space = s.space(body.space_id)
    if space is None or space.kind != "thread":
        return
    check_member(s, body.space_id, actor)  # a stranger learns nothing more
    refuse_if(may.thread_change(room_facts(space)))


def is_thread_event(body: SpaceCreated) -> bool:
    """A ``space.created`` the thread rule decides (one naming a parent or a root too)."""
    return body.kind == "thread" or body.parent_space_id is not None or bool(body.root_message_id)


def check_thread_created(s: DoorState, body: SpaceCreated, actor: Actor, ctx: Ctx) -> Decision:
    """``space.created`` with ``kind: "thread"``: grown from one message of a room.

    Anybody in the room may open one (a thread is talk). Not inside a thread, not in a
    closed space, not from a message taken back, and one thread per message.
    """
    if body.kind != "thread":
        refuse("invalid_event", "only a thread has a parent and a root message", "parent_space_id")
    if body.parent_space_id is None or body.root_message_id is None:
        refuse("invalid_event", "a thread names its parent_space_id and its root_message_id")
    if body.members or body.home_of or body.asked_of or body.key or body.shared is not None:
        refuse(
            "invalid_event", "a thread has no members of its own: whoever is in its room is in it"
        )
    if body.opened_for is not None:
        refuse("invalid_event", "opened_for is filled in by Chips", "opened_for")
    check_member(s, body.parent_space_id, actor)
    parent = s.space(body.parent_space_id)
    if parent is None:
        refuse("forbidden", "you are not a member of this space", "parent_space_id")
    if parent.kind == "thread":
        refuse("invalid_event", "a thread is not opened inside a thread", "parent_space_id")
    if parent.state != "open":
        refuse("invalid_event", "a thread is not opened in a closed space", "parent_space_id")
    root = s.said(body.root_message_id)
    if root is None or root.space_id != parent.id:
        refuse("not_found", "root_message_id names no message of that room", "root_message_id")
    if root.deleted:  # a message taken back takes no thread (docs/product/messages.md)
        refuse(
            "invalid_event", "a thread is not opened from a message taken back", "root_message_id"
        )
    if s.thread_of(body.root_message_id) is not None:
        refuse("invalid_event", "that message roots a thread already", "root_message_id")
    space_id = body.space_id or new_id("spc")
    if not space_id.startswith("spc_"):
        refuse("invalid_event", "a space's id starts with spc_", "space_id")
    if s.space_id_taken(space_id):
        refuse("invalid_event", "that space already exists", "space_id")
    thread = Space(
        space_id,
        "thread",
        body.title,
        created_by=actor.id,
        created_seq=ctx.seq,
        parent_space_id=parent.id,
        root_message_id=body.root_message_id,
    )
    return Decision({"space_id": space_id}, [PutSpace(thread)])
