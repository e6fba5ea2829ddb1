"""The eventlog's reads and writes outside the door rules: heads, keys, the outbox."""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypedDict

import orjson
from sqlalchemy import and_, delete, func, insert, select, text, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common.db import tables as t
from chips_common.db.direct import Conn, compiled
from chips_common.events import LoggedJson, canonical
from chips_eventlog.keys import Seen


async def lock_head(
    conn: AsyncConnection, workspace_id: str, *, create: bool, now: datetime
) -> int | None:
    """Lock the workspace's head row and return its seq (docs/architecture/design.md §2).

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
) -> dict[tuple[str, str], Seen]:
    """For each (credential, key) seen before: the workspace and seqs it produced, and
    the fingerprint of the request that did."""
    if not keys:
        return {}
    rows = await conn.execute(
        select(
            t.idempotency.c.credential_id,
            t.idempotency.c.key,
            t.idempotency.c.workspace_id,
            t.idempotency.c.seqs,
            t.idempotency.c.fingerprint,
        ).where(tuple_(t.idempotency.c.credential_id, t.idempotency.c.key).in_(keys))
    )
    return {
        (r.credential_id, r.key): Seen(r.workspace_id, list(r.seqs), r.fingerprint) for r in rows
    }


class KeyRow(TypedDict):
    """An idempotency key a batch decided from memory writes, with its guard (ADR 0105)."""

    credential_id: str
    key: str
    seqs: list[int]
    fingerprint: str | None


class KeyRecord(KeyRow):
    """An idempotency key's row as a locked batch inserts it."""

    workspace_id: str
    created_at: datetime


async def save_keys(conn: AsyncConnection, rows: list[KeyRecord]) -> None:
    if rows:
        await conn.execute(insert(t.idempotency), rows)


async def write_events(
    conn: AsyncConnection,
    workspace_id: str,
    events: list[LoggedJson],
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
) -> list[LoggedJson]:
    rows = await conn.execute(
        select(t.events.c.body)
        .where(and_(t.events.c.workspace_id == workspace_id, t.events.c.seq.in_(seqs)))
        .order_by(t.events.c.seq)
    )
    return [canonical(row.body) for row in rows]


async def unpublished(
    engine: AsyncEngine, limit: int = 1000, settled: float = 0.0
) -> list[tuple[LoggedJson, str | None]]:
    """Committed events still waiting in the outbox, oldest first, with their trace context.

    ``settled``: only events logged at least that many seconds ago (what a live publisher
    is still confirming is younger); 0 for all of them.
    """
    query = (
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
    if settled > 0:
        age = func.make_interval(0, 0, 0, 0, 0, 0, settled)
        query = query.where(t.events.c.ts < func.now() - age)
    async with engine.connect() as conn:
        rows = await conn.execute(query)
        return [(canonical(row.body), row.traceparent) for row in rows]


async def mark_published(engine: AsyncEngine, events: list[LoggedJson]) -> None:
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


# A batch whose door state is in memory, written in one statement (docs/adr/0105): the head
# row moves from the seq the state was decided at to the batch's last, only if it is still
# there and the lease is still this replica's at its epoch (the guard); the events, their
# outbox rows and the keys are written only with it (each reads the guard's row). The
# answer says whether the guard held, and whether the lease did. The rows travel as one
# JSON document per table: psycopg adapts each array parameter in Python, element by
# element, which cost more than the rest of the statement's client side (ADR 0117).
_GUARDED = text(
    "WITH guard AS ("
    " UPDATE workspaces SET head_seq = :new_head"
    " WHERE id = :workspace_id AND head_seq = :old_head AND {lease}"
    " RETURNING id),"
    " rows AS (SELECT * FROM jsonb_to_recordset(CAST(:events AS jsonb))"
    " AS e(seq bigint, id text, type text, actor_id text, space_id text, body jsonb, tp text)),"
    " ev AS (INSERT INTO events"
    " (workspace_id, seq, id, type, ts, actor_id, space_id, body, traceparent)"
    " SELECT guard.id, e.seq, e.id, e.type, :now, e.actor_id, e.space_id, e.body, e.tp"
    " FROM guard, rows AS e),"
    " ob AS (INSERT INTO outbox (workspace_id, seq) SELECT guard.id, e.seq FROM guard, rows AS e),"
    " k AS (INSERT INTO idempotency"
    " (credential_id, key, workspace_id, seqs, created_at, fingerprint)"
    " SELECT k.credential_id, k.key, guard.id, k.seqs, :now, k.fingerprint"
    " FROM guard, jsonb_to_recordset(CAST(:keys AS jsonb))"
    " AS k(credential_id text, key text, seqs jsonb, fingerprint text))"
    " SELECT EXISTS (SELECT 1 FROM guard) AS wrote, {lease} AS leased"
)
_LEASE = (
    "EXISTS (SELECT 1 FROM eventlog_leases"
    " WHERE partition = :partition AND holder = :holder AND epoch = :epoch)"
)
GUARDED_LEASED = text(_GUARDED.text.format(lease=_LEASE))
GUARDED_UNLEASED = text(_GUARDED.text.format(lease="TRUE"))


GUARDED_LEASED_DIRECT = compiled(GUARDED_LEASED)
GUARDED_UNLEASED_DIRECT = compiled(GUARDED_UNLEASED)


def _guarded(
    workspace_id: str,
    old_head: int,
    new_head: int,
    events: list[LoggedJson],
    traces: dict[int, str | None],
    keys: list[KeyRow],
    now: datetime,
    lease: tuple[int, str, int] | None,
) -> dict[str, object]:
    params: dict[str, object] = {
        "workspace_id": workspace_id,
        "old_head": old_head,
        "new_head": new_head,
        "now": now,
        "events": orjson.dumps(
            [
                {
                    "seq": e["seq"],
                    "id": e["id"],
                    "type": e["type"],
                    "actor_id": e["actor"]["id"],
                    "space_id": e.get("space_id"),
                    "body": e,
                    "tp": traces.get(e["seq"]),
                }
                for e in events
            ]
        ).decode(),
        "keys": orjson.dumps(
            [
                {
                    "credential_id": k["credential_id"],
                    "key": k["key"],
                    "seqs": k["seqs"],
                    "fingerprint": k["fingerprint"],
                }
                for k in keys
            ]
        ).decode(),
    }
    if lease is not None:
        params.update(partition=lease[0], holder=lease[1], epoch=lease[2])
    return params


async def write_guarded(
    conn: AsyncConnection | Conn,
    workspace_id: str,
    old_head: int,
    new_head: int,
    events: list[LoggedJson],
    traces: dict[int, str | None],
    keys: list[KeyRow],
    now: datetime,
    lease: tuple[int, str, int] | None,
) -> tuple[bool, bool]:
    """Write a batch decided from memory in one statement, guarded by the head row and
    the lease (``(partition, holder, epoch)``; None when not under one). Returns whether
    it was written, and whether the lease still stood. ``conn`` is an engine's connection
    (in a transaction with the door-state rows), or a psycopg one in autocommit
    (docs/adr/0120)."""
    params = _guarded(workspace_id, old_head, new_head, events, traces, keys, now, lease)
    row: Any
    if isinstance(conn, AsyncConnection):
        statement = GUARDED_UNLEASED if lease is None else GUARDED_LEASED
        row = (await conn.execute(statement, params)).one()
    else:
        sql = GUARDED_UNLEASED_DIRECT if lease is None else GUARDED_LEASED_DIRECT
        row = await (await conn.execute(sql, params)).fetchone()
    return bool(row.wrote), bool(row.leased)
