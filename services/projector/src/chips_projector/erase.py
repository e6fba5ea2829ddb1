"""``space.erased`` in the read models: every row of the space and its threads goes.

A rebuild never sees the erased events (the eventlog deleted them), so applying the
erasure live and rebuilding from seq 0 give the same tables (docs/adr/0010).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db import tables as t


async def apply_space_erased(conn: AsyncConnection, event: dict[str, Any]) -> None:
    erased = [event["space_id"], *(event.get("threads") or [])]
    for table in (t.rm_messages, t.rm_members, t.rm_openers, t.rm_spaces):
        column = table.c.id if table is t.rm_spaces else table.c.space_id
        await conn.execute(delete(table).where(column.in_(erased)))
