"""Read models of what is done to messages after they are posted (docs/product/messages.md).

The room shows the latest words, marked edited; a tombstone where a message was taken
back (its pin goes with it); pins; each person's hidden lines; and the feedback standing
under each line. The log keeps every version, so a rebuild folds the same rows.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, delete, func, insert, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db import projector_tables as pt
from chips_common.events.wire import EventJson
from chips_projector.rules import hides, pins


def _message(event: EventJson) -> Any:
    return pt.rm_messages.c.id == event["message_id"]


async def apply_message_edited(conn: AsyncConnection, event: EventJson) -> None:
    await conn.execute(
        update(pt.rm_messages).where(_message(event)).values(text=event["text"], edited=True)
    )


async def apply_message_deleted(conn: AsyncConnection, event: EventJson) -> None:
    await conn.execute(
        update(pt.rm_messages)
        .where(_message(event))
        .values(text="", card=None, deleted=True, pinned=False)
    )
    await conn.execute(
        delete(pt.rm_feedback).where(pt.rm_feedback.c.message_id == event["message_id"])
    )


async def apply_message_heard(conn: AsyncConnection, event: EventJson) -> None:
    """A turn heard the message while working: "J1 heard this while working" beneath it
    (docs/product/websocket.md; docs/adr/0075). Each agent once, in the order they heard it."""
    heard_by = pt.rm_messages.c.heard_by
    who = func.jsonb_build_array(event["actor"]["id"])
    await conn.execute(
        update(pt.rm_messages)
        .where(
            and_(_message(event), ~func.coalesce(heard_by, text("'[]'::jsonb")).bool_op("@>")(who))
        )
        .values(heard_by=func.coalesce(heard_by, text("'[]'::jsonb")).op("||")(who))
    )


async def apply_message_pinned(conn: AsyncConnection, event: EventJson) -> None:
    await conn.execute(update(pt.rm_messages).where(_message(event)).values(pinned=pins(event)))


async def apply_message_hidden(conn: AsyncConnection, event: EventJson) -> None:
    who = event["actor"]["id"]
    if hides(event):
        await conn.execute(
            pg_insert(pt.rm_hidden)
            .values(
                participant_id=who,
                message_id=event["message_id"],
                workspace_id=event["workspace_id"],
            )
            .on_conflict_do_nothing()
        )
    else:
        await conn.execute(
            delete(pt.rm_hidden).where(
                and_(
                    pt.rm_hidden.c.participant_id == who,
                    pt.rm_hidden.c.message_id == event["message_id"],
                )
            )
        )


async def apply_feedback(conn: AsyncConnection, event: EventJson) -> None:
    fb = pt.rm_feedback.c
    who = event["actor"]["id"]
    if event.get("withdrawn"):
        await conn.execute(
            delete(pt.rm_feedback).where(
                and_(
                    fb.message_id == event["message_id"],
                    fb.from_id == who,
                    fb.kind == "reaction",
                    fb.emoji == event["emoji"],
                )
            )
        )
        return
    await conn.execute(
        insert(pt.rm_feedback).values(
            id=event["id"],
            workspace_id=event["workspace_id"],
            space_id=event["space_id"],
            message_id=event["message_id"],
            from_id=who,
            kind=event["kind"],
            emoji=event.get("emoji"),
            note=event.get("note"),
            reasons=event.get("reasons"),
            seq=event["seq"],
        )
    )
