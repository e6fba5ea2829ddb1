"""Read-your-writes for reads from the projector's read models (docs/architecture/design.md §5)."""

from __future__ import annotations

import asyncio
import time

from sqlalchemy import select

from chips_common.db import projector_tables as pt
from chips_gateway.context import Ctx


async def checkpoint(ctx: Ctx, workspace_id: str) -> int:
    """The last seq the projector has applied for the workspace."""
    async with ctx.engine.connect() as conn:
        seq = (
            await conn.execute(
                select(pt.projector_checkpoints.c.seq).where(
                    pt.projector_checkpoints.c.workspace_id == workspace_id
                )
            )
        ).scalar()
    return int(seq or 0)


async def wait_for_checkpoint(ctx: Ctx, workspace_id: str, after_seq: int) -> int:
    """Read-your-writes: wait (a bounded while) until the projector has applied after_seq."""
    deadline = time.monotonic() + ctx.settings.read_your_writes_timeout_seconds
    seq = await checkpoint(ctx, workspace_id)
    while seq < after_seq and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        seq = await checkpoint(ctx, workspace_id)
    return seq
