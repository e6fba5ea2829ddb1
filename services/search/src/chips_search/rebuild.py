"""Rebuilding the index from seq 0, and a digest to compare two indexes by."""

from __future__ import annotations

import hashlib

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.db import tables as t
from chips_common.db.search_tables import (
    INDEX_TABLES,
    TSV_INDEX,
    TSV_INDEX_DDL,
    search_checkpoints,
)
from chips_search.consumer import apply_until


async def rebuild(engine: AsyncEngine) -> int:
    """Empty the index and fold the whole log again; return how many workspaces.

    One transaction: a search waits for it, and sees the old index or the new one. The
    GIN index is made once the rows are in, which is the bulk path of the index.
    """
    async with engine.begin() as conn:
        names = ", ".join(table.name for table in (*INDEX_TABLES, search_checkpoints))
        await conn.execute(text(f"TRUNCATE {names}"))
        await conn.execute(text(f"DROP INDEX {TSV_INDEX}"))
        workspaces = [row.id for row in await conn.execute(select(t.workspaces.c.id))]
        for workspace_id in workspaces:
            await apply_until(conn, workspace_id, None)
        await conn.execute(text("SET LOCAL maintenance_work_mem = '256MB'"))
        await conn.execute(text(TSV_INDEX_DDL))
    return len(workspaces)


async def digest(engine: AsyncEngine) -> str:
    """A SHA-256 over every row of the index in primary-key order (tsvectors as text)."""
    h = hashlib.sha256()
    async with engine.connect() as conn:
        for table in INDEX_TABLES:
            order = list(table.primary_key.columns)
            for row in await conn.execute(select(table).order_by(*order)):
                h.update(repr(tuple(str(value) for value in row)).encode())
    return h.hexdigest()
