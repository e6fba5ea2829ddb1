"""Folding committed events into the search index, checkpoint in the same transaction.

The same shape as the projector's (DESIGN.md §2, §5): a ``CHIPS_EVENTS`` message is only
a prompt; the handler reads every event after its checkpoint from the log in Postgres,
so a message JetStream lost or reordered is healed from the log, and a redelivered one
finds the checkpoint past it and does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common import otel
from chips_common.db import tables as t
from chips_common.db.search_tables import search_checkpoints
from chips_common.events import canonical
from chips_common.service.consumer import Handler
from chips_search import store

log = logging.getLogger(__name__)
tracer = otel.tracer("chips.search")

# The event types the index folds; the rest only move the checkpoint.
INDEXED = frozenset({"message.post", *store.APPLY})


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
    """Index every event after the checkpoint up to ``upto`` (the head when None)."""
    checkpoint = await store.lock_checkpoint(conn, workspace_id)
    index = store.Index(conn, workspace_id)
    while upto is None or checkpoint < upto:
        batch = await events_traced(conn, workspace_id, checkpoint, upto)
        if not batch:
            break
        for event, traceparent in batch:
            if event["type"] in INDEXED:
                with tracer.start_as_current_span(
                    "search.apply",
                    context=otel.from_traceparent(traceparent),
                    attributes={
                        otel.WORKSPACE_ID: workspace_id,
                        otel.SEQ: event["seq"],
                        otel.EVENT_TYPE: event["type"],
                    },
                ):
                    await index.apply(event)
        checkpoint = batch[-1][0]["seq"]
    await index.flush()
    await store.save_checkpoint(conn, workspace_id, checkpoint)
    return checkpoint


def build_handler(engine: AsyncEngine) -> Handler:
    # What this process has committed, per workspace: a message at or below it has been
    # indexed already (the checkpoint only moves on), so it costs no transaction.
    indexed: dict[str, int] = {}

    async def handle(workspace_id: str, seq: int) -> None:
        if seq and seq <= indexed.get(workspace_id, 0):
            return
        # Up to the head, not only to ``seq``: what the log holds past the message is
        # committed (seqs of a workspace commit in order), so it is indexed without
        # waiting for its own message, which then finds the checkpoint past it.
        async with engine.begin() as conn:
            reached = await apply_until(conn, workspace_id, None)
        indexed[workspace_id] = reached

    return handle


async def behind(engine: AsyncEngine) -> list[str]:
    """The workspaces whose head is past the index's checkpoint."""
    c = search_checkpoints.c
    query = (
        select(t.workspaces.c.id)
        .select_from(
            t.workspaces.outerjoin(search_checkpoints, c.workspace_id == t.workspaces.c.id)
        )
        .where(t.workspaces.c.head_seq > func.coalesce(c.seq, 0))
    )
    async with engine.connect() as conn:
        return [row.id for row in await conn.execute(query)]


async def sweep(engine: AsyncEngine, stop: asyncio.Event, every: float) -> None:
    """Catch up any workspace the stream left behind (its last message lost or delayed).

    A lost message in the middle is healed by the next one; one lost at the tail has no
    next one, so the log's heads are compared with the checkpoints every ``every`` seconds.
    """
    handle = build_handler(engine)
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
        try:
            for workspace_id in await behind(engine):
                await handle(workspace_id, 0)
        except Exception:
            log.exception("the search sweep failed; it runs again in %.1fs", every)
