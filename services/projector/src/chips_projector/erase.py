"""``space.erased`` in the read models: every row of the space and its threads goes.

A rebuild never sees the erased events (the eventlog deleted them), so applying the
erasure live and rebuilding from seq 0 give the same tables (docs/adr/0010).
"""

from __future__ import annotations

from sqlalchemy import and_, delete, select
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db import projector_tables as pt
from chips_common.events.wire import EventJson
from chips_projector.rules import erased_spaces


async def apply_space_erased(conn: AsyncConnection, event: EventJson) -> None:
    erased = erased_spaces(event)
    said = select(pt.rm_messages.c.id).where(pt.rm_messages.c.space_id.in_(erased))
    await conn.execute(delete(pt.rm_hidden).where(pt.rm_hidden.c.message_id.in_(said)))
    runs = select(pt.rm_runs.c.id).where(pt.rm_runs.c.space_id.in_(erased))
    await conn.execute(delete(pt.rm_steps).where(pt.rm_steps.c.run_id.in_(runs)))
    for table in (
        pt.rm_messages,
        pt.rm_members,
        pt.rm_openers,
        pt.rm_feedback,
        pt.rm_runs,
        pt.rm_cards,
        pt.rm_spaces,
    ):
        column = table.c.id if table is pt.rm_spaces else table.c.space_id
        await conn.execute(delete(table).where(column.in_(erased)))
    # What the room spent stays on its harnesses' accounts; the room's own total goes.
    usage = pt.rm_usage.c
    await conn.execute(
        delete(pt.rm_usage).where(and_(usage.scope == "space", usage.scope_id.in_(erased)))
    )
    # A lane is read from its copy in the room it went to (ADR 0017): one that went into
    # the erased room goes; one that came out of it stays the other room's.
    await conn.execute(delete(pt.rm_lanes).where(pt.rm_lanes.c.to_space_id.in_(erased)))
