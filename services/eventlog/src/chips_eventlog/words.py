"""The rules at the door for what is done to a message after it is posted (spec/messages.md).

Edit, take back, delete for me, pin, and feedback. Each reads the message from the log
(a message's id is its event's ULID, so that is one lookup by primary key) and what has
been done to it since from ``message_marks``, a door-state table with a row only for
messages something was done to; posting writes nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, delete, insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from chips_common.append import Actor
from chips_common.db import tables as t
from chips_common.events import (
    Feedback,
    MessageDeleted,
    MessageEdited,
    MessageHidden,
    MessagePinned,
    MessageShown,
    MessageUnpinned,
)
from chips_common.ids import event_id_for_message

if TYPE_CHECKING:
    from chips_eventlog.door import Door


@dataclass(frozen=True)
class Said:
    """A message as the door needs it: where, by whom, what kind, and what became of it."""

    message_id: str
    space_id: str
    author_id: str
    author_kind: str
    kind: str
    deleted: bool
    pinned: bool


def _refused(code: str, message: str, field: str | None = None) -> Exception:
    from chips_eventlog.door import Refused

    return Refused(code, message, field)


async def find(door: Door, message_id: str) -> Said | None:
    """The message ``message_id`` names in this workspace (logged, or earlier in the batch)."""
    if not message_id.startswith("msg_"):
        return None
    row = (
        await door.conn.execute(
            select(t.events.c.body).where(
                and_(
                    t.events.c.id == event_id_for_message(message_id),
                    t.events.c.workspace_id == door.workspace_id,
                    t.events.c.type == "message.post",
                )
            )
        )
    ).first()
    body: dict[str, Any] | None = row.body if row is not None else None
    if body is None:
        body = next((e for e in door.pending if e.get("message_id") == message_id), None)
        if body is None:
            return None
    marks = (
        await door.conn.execute(
            select(t.message_marks.c.deleted_seq, t.message_marks.c.pinned).where(
                t.message_marks.c.message_id == message_id
            )
        )
    ).first()
    author = body["actor"]
    return Said(
        message_id=message_id,
        space_id=body["space_id"],
        author_id=author["id"],
        author_kind=author["kind"],
        kind=body.get("kind", "text"),
        deleted=bool(marks and marks.deleted_seq is not None),
        pinned=bool(marks and marks.pinned),
    )


async def message_in(door: Door, space_id: str, message_id: str, *, live: bool = True) -> Said:
    """The message, which must be in ``space_id`` (and not taken back, when ``live``)."""
    found = await find(door, message_id)
    if found is None or found.space_id != space_id:
        raise _refused("not_found", "message_id names no message in this space", "message_id")
    if live and found.deleted:
        raise _refused(
            "invalid_event", "that message was taken back; it takes nothing more", "message_id"
        )
    return found


async def mark(door: Door, said: Said, **values: Any) -> None:
    """Record what was done to a message in ``message_marks``."""
    stmt = pg_insert(t.message_marks).values(
        message_id=said.message_id,
        workspace_id=door.workspace_id,
        space_id=said.space_id,
        **values,
    )
    await door.conn.execute(stmt.on_conflict_do_update(index_elements=["message_id"], set_=values))


async def check_edited(door: Door, body: MessageEdited, actor: Actor) -> dict[str, Any]:
    """Only the author changes a message's words, and only while it stands."""
    await door.check_member(body.space_id, actor)
    said = await message_in(door, body.space_id, body.message_id)
    if said.author_id != actor.id:
        raise _refused("forbidden", "only the author of a message may edit it", "message_id")
    if said.kind == "system":
        raise _refused("forbidden", "a system line is not edited", "message_id")
    await mark(door, said, edited_seq=door.head_seq + 1)
    return {}


async def check_deleted(door: Door, body: MessageDeleted, actor: Actor) -> dict[str, Any]:
    """Taken back by its author, the room's owner, or a workspace owner or admin."""
    standing = await door.check_member(body.space_id, actor)
    said = await message_in(door, body.space_id, body.message_id, live=False)
    if said.deleted:
        raise _refused("invalid_event", "that message was taken back already", "message_id")
    if said.author_id != actor.id and standing != "owner":
        who = await door.participant(actor.id)
        if who is None or who.role not in ("owner", "admin"):
            raise _refused(
                "forbidden",
                "a message is taken back by its author, the room's owner, "
                "or a workspace owner or admin",
                "message_id",
            )
    await mark(door, said, deleted_seq=door.head_seq + 1, pinned=False)
    return {}


async def check_hidden(
    door: Door, body: MessageHidden | MessageShown, actor: Actor
) -> dict[str, Any]:
    """Delete for me, and its undo: a person's own room, anyone's message, a tombstone too."""
    if actor.kind != "person":
        raise _refused("forbidden", f"{body.type} is a person's; a harness may not send it")
    await door.check_member(body.space_id, actor)
    said = await message_in(door, body.space_id, body.message_id, live=False)
    key = and_(
        t.message_hidden.c.message_id == said.message_id,
        t.message_hidden.c.participant_id == actor.id,
    )
    hidden = (await door.conn.execute(select(t.message_hidden.c.message_id).where(key))).first()
    if isinstance(body, MessageHidden):
        if hidden is not None:
            raise _refused("invalid_event", "you have hidden that message already", "message_id")
        await door.conn.execute(
            insert(t.message_hidden).values(
                message_id=said.message_id, participant_id=actor.id, workspace_id=door.workspace_id
            )
        )
    else:
        if hidden is None:
            raise _refused("invalid_event", "you have not hidden that message", "message_id")
        await door.conn.execute(delete(t.message_hidden).where(key))
    return {}


async def check_pinned(
    door: Door, body: MessagePinned | MessageUnpinned, actor: Actor
) -> dict[str, Any]:
    """Anyone in the room but a guest pins a standing message, and lets it go."""
    standing = await door.check_member(body.space_id, actor)
    if standing == "guest":
        raise _refused("forbidden", "a guest does not pin messages", "message_id")
    said = await message_in(door, body.space_id, body.message_id)
    pin = isinstance(body, MessagePinned)
    if pin and said.pinned:
        raise _refused("invalid_event", "that message is pinned already", "message_id")
    if not pin and not said.pinned:
        raise _refused("invalid_event", "that message is not pinned", "message_id")
    await mark(door, said, pinned=pin)
    return {}


async def check_feedback(door: Door, body: Feedback, actor: Actor) -> dict[str, Any]:
    """A person's reaction or correction (spec/messages.md, Feedback).

    A correction is on a harness's words in this room and nothing else; a reaction on
    anybody's. The same emoji from the same person again takes the reaction back.
    """
    if actor.kind != "person":
        raise _refused("forbidden", "feedback is a person's to give")
    standing = await door.check_member(body.space_id, actor)
    found = await find(door, body.message_id)
    if found is None:
        raise _refused("not_found", "message_id names no message anybody sent", "message_id")
    if found.space_id != body.space_id:
        raise _refused("invalid_event", "that message was said in another space", "message_id")
    if found.deleted:
        raise _refused(
            "invalid_event", "that message was taken back; it takes nothing more", "message_id"
        )
    filled: dict[str, Any] = {"about": found.author_id, "standing": standing}
    if body.kind == "correction":
        if found.author_kind != "harness" or found.kind == "system":
            raise _refused(
                "invalid_event",
                "a correction is on a harness's words; this message is not a harness's",
                "message_id",
            )
        return filled
    assert body.emoji is not None  # the catalogue refuses a reaction without one
    key = and_(
        t.reactions.c.message_id == found.message_id,
        t.reactions.c.participant_id == actor.id,
        t.reactions.c.emoji == body.emoji,
    )
    if (await door.conn.execute(select(t.reactions.c.emoji).where(key))).first() is not None:
        await door.conn.execute(delete(t.reactions).where(key))
        filled["withdrawn"] = True
    else:
        await door.conn.execute(
            insert(t.reactions).values(
                message_id=found.message_id,
                participant_id=actor.id,
                emoji=body.emoji,
                workspace_id=door.workspace_id,
            )
        )
    return filled


async def last_harness_message(door: Door, space_id: str) -> str | None:
    """The newest message a harness said in a room that still stands (for ``/wrong``)."""
    e, m = t.events.c, t.message_marks.c
    said_id = e.body["message_id"].astext
    taken_back = (
        select(m.message_id)
        .where(and_(m.message_id == said_id, m.deleted_seq.is_not(None)))
        .exists()
    )
    query = (
        select(said_id.label("message_id"))
        .select_from(t.events.join(t.participants, t.participants.c.id == e.actor_id))
        .where(
            and_(
                e.workspace_id == door.workspace_id,
                e.space_id == space_id,
                e.type == "message.post",
                t.participants.c.kind == "harness",
                ~taken_back,
            )
        )
        .order_by(e.seq.desc())
        .limit(1)
    )
    row = (await door.conn.execute(query)).first()
    return None if row is None else str(row.message_id)
