"""``space.erased`` in the read models: every row of the space and its threads goes.

A rebuild never sees the erased events (the eventlog deleted them), so applying the
erasure live and rebuilding from seq 0 give the same tables (docs/adr/0010).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, delete, select
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db import run_tables as rt
from chips_common.db import tables as t


async def apply_space_erased(conn: AsyncConnection, event: dict[str, Any]) -> None:
    erased = [event["space_id"], *(event.get("threads") or [])]
    said = select(t.rm_messages.c.id).where(t.rm_messages.c.space_id.in_(erased))
    await conn.execute(delete(t.rm_hidden).where(t.rm_hidden.c.message_id.in_(said)))
    runs = select(rt.rm_runs.c.id).where(rt.rm_runs.c.space_id.in_(erased))
    await conn.execute(delete(rt.rm_steps).where(rt.rm_steps.c.run_id.in_(runs)))
    for table in (
        t.rm_messages,
        t.rm_members,
        t.rm_openers,
        t.rm_feedback,
        rt.rm_runs,
        rt.rm_cards,
        t.rm_spaces,
    ):
        column = table.c.id if table is t.rm_spaces else table.c.space_id
        await conn.execute(delete(table).where(column.in_(erased)))
    # What the room spent stays on its harnesses' accounts; the room's own total goes.
    usage = rt.rm_usage.c
    await conn.execute(
        delete(rt.rm_usage).where(and_(usage.scope == "space", usage.scope_id.in_(erased)))
    )
    # A lane is read from its copy in the room it went to (ADR 0017): one that went into
    # the erased room goes; one that came out of it stays the other room's.
    await conn.execute(delete(rt.rm_lanes).where(rt.rm_lanes.c.to_space_id.in_(erased)))
