"""Folding committed events into the read models, checkpoint in the same transaction.

The loop is the one the search index's is (``chips_common.service.fold``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common import otel
from chips_common.service.consumer import Handler
from chips_common.service.fold import fold_events
from chips_projector import store

tracer = otel.tracer("chips.projector")


async def apply_until(conn: AsyncConnection, workspace_id: str, upto: int | None) -> int:
    """Apply every event after the checkpoint up to ``upto`` (the head when None)."""
    checkpoint = await store.lock_checkpoint(conn, workspace_id)

    async def apply(event: dict[str, Any]) -> None:
        await store.apply_event(conn, event)

    reached = await fold_events(
        conn, workspace_id, checkpoint, upto, apply, tracer=tracer, span="projector.apply"
    )
    await store.save_checkpoint(conn, workspace_id, reached)
    return reached


def build_handler(engine: AsyncEngine) -> Handler:
    async def handle(workspace_id: str, seq: int) -> None:
        async with engine.begin() as conn:
            await apply_until(conn, workspace_id, seq)

    return handle
