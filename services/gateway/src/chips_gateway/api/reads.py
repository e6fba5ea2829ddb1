"""Read-your-writes for reads from the projector's read models (docs/architecture/design.md §5)."""

from __future__ import annotations

import asyncio
import time

from sqlalchemy import select

from chips_common.db import projector_tables as pt
from chips_gateway.context import Ctx

# How often a read waiting for the projector reads its checkpoint again, and every how
# many reads it asks the projector again.
POLL_SECONDS = 0.05
NUDGE_AGAIN = 4


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
    """Read-your-writes: wait (a bounded while) until the projector has applied after_seq.

    While it waits it asks the projector for the workspace (a nudge, docs/adr/0168): the
    projector may be holding the events to fold them with later ones. Asked again every
    ``NUDGE_AGAIN`` polls, in case a nudge was lost or came before the events did.
    """
    deadline = time.monotonic() + ctx.settings.read_your_writes_timeout_seconds
    seq = await checkpoint(ctx, workspace_id)
    polls = 0
    while seq < after_seq and time.monotonic() < deadline:
        if polls % NUDGE_AGAIN == 0:
            await ctx.nudge("projector", workspace_id, after_seq)
        polls += 1
        await asyncio.sleep(POLL_SECONDS)
        seq = await checkpoint(ctx, workspace_id)
    return seq
