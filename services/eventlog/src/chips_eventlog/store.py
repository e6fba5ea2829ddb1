"""The eventlog's reads and writes outside the door rules: heads, keys, the outbox."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, delete, insert, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common.db import tables as t
from chips_common.events import canonical


async def lock_head(
    conn: AsyncConnection, workspace_id: str, *, create: bool, now: datetime
) -> int | None:
    """Lock the workspace's head row and return its seq (DESIGN.md §2).

    With ``create`` a missing workspace gets its row first (head 0), so the request that
    creates it holds the lock like any other.
    """
    if create:
        await conn.execute(
            pg_insert(t.workspaces)
            .values(id=workspace_id, name="", head_seq=0, created_at=now)
            .on_conflict_do_nothing()
        )
    return (
        await conn.execute(
            select(t.workspaces.c.head_seq)
            .where(t.workspaces.c.id == workspace_id)
            .with_for_update()
        )
    ).scalar()


async def save_head(conn: AsyncConnection, workspace_id: str, head_seq: int) -> None:
    await conn.execute(
        update(t.workspaces).where(t.workspaces.c.id == workspace_id).values(head_seq=head_seq)
    )


async def drop_empty_workspace(conn: AsyncConnection, workspace_id: str) -> None:
    """Remove a head row that a creating request made but nothing was logged under."""
    await conn.execute(
        delete(t.workspaces).where(
            and_(t.workspaces.c.id == workspace_id, t.workspaces.c.head_seq == 0)
        )
    )


async def find_keys(
    conn: AsyncConnection, keys: list[tuple[str, str]]
) -> dict[tuple[str, str], tuple[str, list[int]]]:
    """For each (credential, key) seen before: the workspace and seqs it produced."""
    if not keys:
        return {}
    rows = await conn.execute(
        select(
            t.idempotency.c.credential_id,
            t.idempotency.c.key,
            t.idempotency.c.workspace_id,
            t.idempotency.c.seqs,
        ).where(tuple_(t.idempotency.c.credential_id, t.idempotency.c.key).in_(keys))
    )
    return {(r.credential_id, r.key): (r.workspace_id, list(r.seqs)) for r in rows}


async def save_keys(conn: AsyncConnection, rows: list[dict[str, Any]]) -> None:
    if rows:
        await conn.execute(insert(t.idempotency), rows)


async def write_events(
    conn: AsyncConnection,
    workspace_id: str,
    events: list[dict[str, Any]],
    traces: dict[int, str | None],
    now: datetime,
) -> None:
    """Write the events a batch let in, and their outbox rows, in two statements."""
    if not events:
        return
    await conn.execute(
        insert(t.events),
        [
            {
                "workspace_id": workspace_id,
                "seq": e["seq"],
                "id": e["id"],
                "type": e["type"],
                "ts": now,
                "actor_id": e["actor"]["id"],
                "space_id": e.get("space_id"),
                "body": e,
                "traceparent": traces.get(e["seq"]),
            }
            for e in events
        ],
    )
    await conn.execute(
        insert(t.outbox), [{"workspace_id": workspace_id, "seq": e["seq"]} for e in events]
    )


async def read_events(
    conn: AsyncConnection, workspace_id: str, seqs: list[int]
) -> list[dict[str, Any]]:
    rows = await conn.execute(
        select(t.events.c.body)
        .where(and_(t.events.c.workspace_id == workspace_id, t.events.c.seq.in_(seqs)))
        .order_by(t.events.c.seq)
    )
    return [canonical(row.body) for row in rows]


async def unpublished(
    engine: AsyncEngine, limit: int = 1000
) -> list[tuple[dict[str, Any], str | None]]:
    """Committed events still waiting in the outbox, oldest first, with their trace context."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(t.events.c.body, t.events.c.traceparent)
            .select_from(
                t.outbox.join(
                    t.events,
                    and_(
                        t.outbox.c.workspace_id == t.events.c.workspace_id,
                        t.outbox.c.seq == t.events.c.seq,
                    ),
                )
            )
            .order_by(t.outbox.c.workspace_id, t.outbox.c.seq)
            .limit(limit)
        )
        return [(canonical(row.body), row.traceparent) for row in rows]


async def mark_published(engine: AsyncEngine, events: list[dict[str, Any]]) -> None:
    by_workspace: dict[str, list[int]] = {}
    for event in events:
        by_workspace.setdefault(event["workspace_id"], []).append(event["seq"])
    async with engine.begin() as conn:
        for workspace_id, seqs in by_workspace.items():
            await conn.execute(
                delete(t.outbox).where(
                    and_(t.outbox.c.workspace_id == workspace_id, t.outbox.c.seq.in_(seqs))
                )
            )
