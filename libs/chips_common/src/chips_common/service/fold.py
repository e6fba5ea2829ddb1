"""Folding the log into a read model: the loop the projector and the search index share.

A consumer's handler (``chips_common.service.consumer``) is prompted with a workspace and
a seq; what it folds it reads from the log in Postgres, after its checkpoint, in pages,
in seq order, each event under a span of the trace it was appended under (DESIGN.md §2,
§5). Its checkpoint is locked before and saved after, in the same transaction, by the
caller: each read model keeps its own checkpoint table.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import Any

from opentelemetry.trace import Tracer
from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common import otel
from chips_common.db import tables as t
from chips_common.events import canonical

Apply = Callable[[dict[str, Any]], Awaitable[None]]


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


async def fold_events(
    conn: AsyncConnection,
    workspace_id: str,
    checkpoint: int,
    upto: int | None,
    apply: Apply,
    *,
    tracer: Tracer,
    span: str,
    wanted: Collection[str] | None = None,
) -> int:
    """Apply every event after ``checkpoint`` up to ``upto`` (the head when None).

    Only the types in ``wanted`` are applied when it is given; the rest are read past.
    Returns the seq reached: the new checkpoint, for the caller to save.
    """
    while upto is None or checkpoint < upto:
        batch = await events_traced(conn, workspace_id, checkpoint, upto)
        if not batch:
            break
        for event, traceparent in batch:
            if wanted is not None and event["type"] not in wanted:
                continue
            attributes: dict[str, str | int] = {
                otel.WORKSPACE_ID: workspace_id,
                otel.SEQ: event["seq"],
                otel.EVENT_TYPE: event["type"],
            }
            if "message_id" in event:
                attributes[otel.MESSAGE_ID] = event["message_id"]
            with tracer.start_as_current_span(
                span, context=otel.from_traceparent(traceparent), attributes=attributes
            ):
                await apply(event)
        checkpoint = batch[-1][0]["seq"]
    return checkpoint
