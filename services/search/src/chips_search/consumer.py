"""Folding committed events into the search index, checkpoint in the same transaction.

The same loop as the projector's, shared (``chips_common.service.fold``; DESIGN.md §2,
§5): a ``CHIPS_EVENTS`` message is only a prompt; the handler reads every event after its
checkpoint from the log in Postgres, so a message JetStream lost or reordered is healed
from the log, and a redelivered one finds the checkpoint past it and does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common import otel
from chips_common.db import tables as t
from chips_common.db.search_tables import search_checkpoints
from chips_common.service.consumer import Handler
from chips_common.service.fold import fold_events
from chips_search import store

log = logging.getLogger(__name__)
tracer = otel.tracer("chips.search")

# The event types the index folds; the rest only move the checkpoint.
INDEXED = frozenset({"message.post", *store.APPLY})


async def apply_until(conn: AsyncConnection, workspace_id: str, upto: int | None) -> int:
    """Index every event after the checkpoint up to ``upto`` (the head when None)."""
    checkpoint = await store.lock_checkpoint(conn, workspace_id)
    index = store.Index(conn, workspace_id)
    reached = await fold_events(
        conn,
        workspace_id,
        checkpoint,
        upto,
        index.apply,
        tracer=tracer,
        span="search.apply",
        wanted=INDEXED,
    )
    await index.flush()
    await store.save_checkpoint(conn, workspace_id, reached)
    return reached


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
