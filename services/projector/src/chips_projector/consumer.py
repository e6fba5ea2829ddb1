"""Folding committed events into the read models, checkpoint in the same transaction."""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common import otel
from chips_common.db import tables as t
from chips_common.events import canonical
from chips_common.service.consumer import Handler
from chips_projector import store

tracer = otel.tracer("chips.projector")


async def events_traced(
    conn: AsyncConnection, workspace_id: str, after: int, upto: int | None, limit: int = 1000
) -> list[tuple[dict[str, Any], str | None]]:
    """Events after ``after`` (up to ``upto``), each with the trace it was appended under."""
    query = select(t.events.c.body, t.events.c.traceparent).where(
        and_(t.events.c.workspace_id == workspace_id, t.events.c.seq > after)
    )
    if upto is not None:
        query = query.where(t.events.c.seq <= upto)
    rows = await conn.execute(query.order_by(t.events.c.seq).limit(limit))
    return [(canonical(row.body), row.traceparent) for row in rows]


async def apply_until(conn: AsyncConnection, workspace_id: str, upto: int | None) -> int:
    """Apply every event after the checkpoint up to ``upto`` (the head when None)."""
    checkpoint = await store.lock_checkpoint(conn, workspace_id)
    while upto is None or checkpoint < upto:
        batch = await events_traced(conn, workspace_id, checkpoint, upto)
        if not batch:
            break
        for event, traceparent in batch:
            attributes: dict[str, str | int] = {
                otel.WORKSPACE_ID: workspace_id,
                otel.SEQ: event["seq"],
                otel.EVENT_TYPE: event["type"],
            }
            if "message_id" in event:
                attributes[otel.MESSAGE_ID] = event["message_id"]
            with tracer.start_as_current_span(
                "projector.apply",
                context=otel.from_traceparent(traceparent),
                attributes=attributes,
            ):
                await store.apply_event(conn, event)
        checkpoint = batch[-1][0]["seq"]
    await store.save_checkpoint(conn, workspace_id, checkpoint)
    return checkpoint


def build_handler(engine: AsyncEngine) -> Handler:
    async def handle(workspace_id: str, seq: int) -> None:
        async with engine.begin() as conn:
            await apply_until(conn, workspace_id, seq)

    return handle
