"""Folding committed events into the read models, checkpoint in the same transaction."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common.service.consumer import Handler
from chips_projector import store


async def apply_until(conn: AsyncConnection, workspace_id: str, upto: int | None) -> int:
    """Apply every event after the checkpoint up to ``upto`` (the head when None)."""
    checkpoint = await store.lock_checkpoint(conn, workspace_id)
    while upto is None or checkpoint < upto:
        events = await store.events_after(conn, workspace_id, checkpoint, upto)
        if not events:
            break
        for event in events:
            await store.apply_event(conn, event)
        checkpoint = events[-1]["seq"]
    await store.save_checkpoint(conn, workspace_id, checkpoint)
    return checkpoint


def build_handler(engine: AsyncEngine) -> Handler:
    async def handle(workspace_id: str, seq: int) -> None:
        async with engine.begin() as conn:
            await apply_until(conn, workspace_id, seq)

    return handle
