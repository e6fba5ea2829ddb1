"""Reading the search index: read-only, scoped by membership now (docs/adr/0027).

The search service writes ``search_docs``; the gateway only reads it, as it reads the
projector's read models. Whom a row may be shown to is never taken from the index: every
search reads the caller's rooms from the door state (``memberships``, the same source as
every other read's membership check), in the same snapshot as the index and its
checkpoint, and asks the index for rows of those rooms (and their threads) only. A line
the caller hid for themselves is left out by the door's ``message_hidden``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, select, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common.db import tables as t
from chips_common.db.search_tables import TEXT_SEARCH_CONFIG, search_checkpoints
from chips_common.rules.search import HEADLINE_OPTIONS

# The newest hits of the caller's rooms older than the cursor, then snippets for them
# alone. The tsquery comes from chips_common.rules.search.build_tsquery (each word typed
# quoted) and is bound, never spliced; Postgres folds it with the index's configuration.
SEARCH_SQL = f"""
SELECT d.doc_id, d.seq, d.space_id, d.room_id, d.kind, d.message_kind, d.message_id,
       d.run_id, d.step_id, d.author_id, d.ts,
       ts_headline('{TEXT_SEARCH_CONFIG}', d.words || E'\\n' || d.extra, query,
                   :headline) AS headline
FROM (
    SELECT *
    FROM search_docs d
    WHERE d.workspace_id = :workspace_id
      AND d.tsv @@ to_tsquery('{TEXT_SEARCH_CONFIG}', :tsquery)
      AND {{scope}}
      AND d.seq < :before
      AND NOT EXISTS (
          SELECT 1 FROM message_hidden h
          WHERE h.message_id = d.message_id AND h.participant_id = :participant_id
      )
    ORDER BY d.seq DESC
    LIMIT :limit
) d, to_tsquery('{TEXT_SEARCH_CONFIG}', :tsquery) AS query
ORDER BY d.seq DESC
"""

IN_ROOMS = "d.room_id = ANY(CAST(:rooms AS text[]))"
IN_ROOM = "d.room_id = :room_id"
IN_THREAD = "d.space_id = :space_id"


@dataclass(frozen=True)
class Hit:
    doc_id: str
    seq: int
    space_id: str
    room_id: str
    kind: str
    message_kind: str | None
    message_id: str | None
    run_id: str | None
    step_id: str | None
    author_id: str
    ts: datetime
    headline: str


@dataclass(frozen=True)
class Found:
    """One page of hits, and the seq of the log the index had folded in when it answered."""

    as_of_seq: int
    hits: list[Hit]


class NotInSpace(Exception):
    """``space_id`` names a space the caller is not in now (or none at all)."""


class SearchReader:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def checkpoint(self, workspace_id: str) -> int:
        async with self.engine.connect() as conn:
            return await _checkpoint(conn, workspace_id)

    async def wait_for_head(self, workspace_id: str, after_seq: int | None, timeout: float) -> int:
        """Wait (a bounded while) until the index has folded in ``after_seq`` (the log's head
        when None; never past it: the index cannot hold what the log does not); its
        checkpoint. The head and the checkpoint are read in one statement, so a search
        the index is ready for costs one round trip here."""
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(
                    text(
                        "SELECT w.head_seq, coalesce(c.seq, 0) AS seq FROM workspaces w"
                        " LEFT JOIN search_checkpoints c ON c.workspace_id = w.id"
                        " WHERE w.id = :workspace_id"
                    ),
                    {"workspace_id": workspace_id},
                )
            ).first()
        head, reached = (int(row.head_seq), int(row.seq)) if row else (0, 0)
        target = head if after_seq is None else min(after_seq, head)
        if reached >= target:
            return reached
        return await self.wait_for(workspace_id, target, timeout)

    async def wait_for(self, workspace_id: str, seq: int, timeout: float) -> int:
        """Wait (a bounded while) until the index has folded in ``seq``; its checkpoint."""
        deadline = time.monotonic() + timeout
        reached = await self.checkpoint(workspace_id)
        while reached < seq and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
            reached = await self.checkpoint(workspace_id)
        return reached

    async def search(
        self,
        workspace_id: str,
        participant_id: str,
        tsquery: str,
        *,
        space_id: str | None,
        before: int,
        limit: int,
    ) -> Found:
        """The caller's hits, newest first: at most ``limit``, each older than ``before``.

        Raises:
            NotInSpace: ``space_id`` is not a space the caller is in now.
        """
        async with self.engine.connect() as conn:
            # One snapshot: who is in which room, the index and its checkpoint agree.
            await conn.execution_options(isolation_level="REPEATABLE READ")
            async with conn.begin():
                as_of, rooms = await _checkpoint_and_rooms(conn, workspace_id, participant_id)
                params: dict[str, Any] = {
                    "workspace_id": workspace_id,
                    "participant_id": participant_id,
                    "tsquery": tsquery,
                    "before": before,
                    "limit": limit,
                    "headline": HEADLINE_OPTIONS,
                }
                if space_id is None:
                    scope = IN_ROOMS
                    params["rooms"] = rooms
                else:
                    parent = await _parent_of(conn, workspace_id, space_id)
                    if (parent or space_id) not in rooms:
                        raise NotInSpace(space_id)
                    # A room with its threads; a thread alone.
                    scope = IN_THREAD if parent else IN_ROOM
                    params["space_id" if parent else "room_id"] = space_id
                if not rooms:
                    return Found(as_of, [])
                rows = await conn.execute(text(SEARCH_SQL.format(scope=scope)), params)
                hits = [Hit(**row._mapping) for row in rows]
        return Found(as_of, hits)


async def _checkpoint(conn: AsyncConnection, workspace_id: str) -> int:
    seq = (
        await conn.execute(
            select(search_checkpoints.c.seq).where(
                search_checkpoints.c.workspace_id == workspace_id
            )
        )
    ).scalar()
    return int(seq or 0)


async def _checkpoint_and_rooms(
    conn: AsyncConnection, workspace_id: str, participant_id: str
) -> tuple[int, list[str]]:
    """The index's checkpoint and the caller's rooms now, in one statement (one snapshot)."""
    row = (
        await conn.execute(
            text(
                "SELECT coalesce((SELECT seq FROM search_checkpoints"
                " WHERE workspace_id = :workspace_id), 0) AS seq,"
                " ARRAY(SELECT space_id FROM memberships WHERE workspace_id = :workspace_id"
                " AND participant_id = :participant_id) AS rooms"
            ),
            {"workspace_id": workspace_id, "participant_id": participant_id},
        )
    ).one()
    return int(row.seq), list(row.rooms)


async def _parent_of(conn: AsyncConnection, workspace_id: str, space_id: str) -> str | None:
    s = t.spaces.c
    parent = (
        await conn.execute(
            select(s.parent_space_id).where(and_(s.id == space_id, s.workspace_id == workspace_id))
        )
    ).scalar()
    return str(parent) if parent else None
