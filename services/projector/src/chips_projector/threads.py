"""Threads in the read models (docs/product/messages.md, Threads).

A thread has a row in ``rm_spaces`` naming its room and root message, and no rows in
``rm_members``: whoever is in the room is in it. A message posted in a thread brings the
room forward in everyone's list (``last_seq``), as a message in the room would.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db import projector_tables as pt
from chips_common.events.wire import EventJson


async def apply_thread_created(conn: AsyncConnection, event: EventJson) -> None:
    await conn.execute(
        insert(pt.rm_spaces).values(
            id=event["space_id"],
            workspace_id=event["workspace_id"],
            kind="thread",
            title=event.get("title"),
            created_by=event["actor"]["id"],
            created_seq=event["seq"],
            created_at=datetime.fromisoformat(event["ts"].replace("Z", "+00:00")),
            last_seq=event["seq"],
            message_count=0,
            parent_space_id=event["parent_space_id"],
            root_message_id=event["root_message_id"],
        )
    )


async def bring_room_forward(conn: AsyncConnection, event: EventJson) -> None:
    """Move a thread's room to the top of the list when somebody says something in it."""
    parent = (
        select(pt.rm_spaces.c.parent_space_id)
        .where(
            and_(pt.rm_spaces.c.id == event["space_id"], pt.rm_spaces.c.parent_space_id.isnot(None))
        )
        .scalar_subquery()
    )
    await conn.execute(
        update(pt.rm_spaces).where(pt.rm_spaces.c.id == parent).values(last_seq=event["seq"])
    )
