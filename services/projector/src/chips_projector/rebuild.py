"""Rebuilding the read models from seq 0, and a digest to compare them by."""

from __future__ import annotations

import hashlib

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.db import projector_tables as pt
from chips_common.db import tables as t
from chips_projector.consumer import apply_until


async def rebuild(engine: AsyncEngine) -> int:
    """Drop every read model and fold the whole log again; return how many workspaces."""
    async with engine.begin() as conn:
        names = ", ".join(table.name for table in (*pt.READ_MODELS, pt.projector_checkpoints))
        await conn.execute(text(f"TRUNCATE {names}"))
        workspaces = [row.id for row in await conn.execute(select(t.workspaces.c.id))]
        for workspace_id in workspaces:
            await apply_until(conn, workspace_id, None)
    return len(workspaces)


async def digest(engine: AsyncEngine) -> str:
    """A SHA-256 over every read model's rows in primary-key order."""
    h = hashlib.sha256()
    async with engine.connect() as conn:
        for table in pt.READ_MODELS:
            order = [c for c in table.primary_key.columns]
            for row in await conn.execute(select(table).order_by(*order)):
                h.update(repr(tuple(row)).encode())
    return h.hexdigest()
