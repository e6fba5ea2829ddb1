"""The notifier's sweep: a workspace whose prompt was lost or acked unfolded caught up,
and the approvals past their time marked done (no event says so), one look a sweep on
psycopg itself and a statement more only for what it found (docs/adr/0166)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime

from sqlalchemy import and_, bindparam, func, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.db import tables as t
from chips_common.db.direct import Conn, Direct
from chips_common.db.notifier_tables import notifications, notifier_checkpoints
from chips_notifier.consumer import Live, Spaces, build_handler

log = logging.getLogger(__name__)

_n = notifications.c


EXPIRE = (
    update(notifications)
    .where(
        and_(
            _n.done_at.is_(None),
            _n.expires_at.is_not(None),
            _n.expires_at <= bindparam("now"),
        )
    )
    .values(done_at=_n.expires_at, done_reason="expired")
    .returning(_n.workspace_id, _n.participant_id, _n.id)
)


async def expire(engine: AsyncEngine, live: Live, now: datetime) -> int:
    """Mark done the approvals past their ``expires_at`` (no event says so)."""
    async with engine.begin() as conn:
        rows = (await conn.execute(EXPIRE, {"now": now})).all()
    by_workspace: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        by_workspace.setdefault(row.workspace_id, []).append((row.participant_id, row.id))
    for workspace_id, changed in by_workspace.items():
        await live.tell(workspace_id, changed)
    return len(rows)


async def behind(engine: AsyncEngine) -> list[str]:
    c = notifier_checkpoints.c
    w = t.workspaces.c
    query = (
        select(w.id)
        .select_from(t.workspaces.outerjoin(notifier_checkpoints, c.workspace_id == w.id))
        .where(w.head_seq > func.coalesce(c.seq, 0))
    )
    async with engine.connect() as conn:
        return [row.id for row in await conn.execute(query)]


# The sweep's one look (docs/adr/0166): the workspaces ``behind`` finds, and whether
# ``EXPIRE`` has a row to mark, in one autocommit statement on psycopg itself.
LOOK = (
    "SELECT ARRAY(SELECT w.id FROM workspaces w LEFT JOIN notifier_checkpoints c"
    " ON c.workspace_id = w.id WHERE w.head_seq > coalesce(c.seq, 0)) AS behind,"
    " EXISTS(SELECT 1 FROM notifications WHERE done_at IS NULL"
    " AND expires_at IS NOT NULL AND expires_at <= %(now)s) AS expired"
)


async def look(engine: AsyncEngine, direct: Direct | None, now: datetime) -> tuple[list[str], bool]:
    """The workspaces behind, and whether an approval expired (without ``direct``: the
    workspaces read on the engine, and True)."""
    if direct is None:
        return await behind(engine), True

    async def one(conn: Conn) -> tuple[list[str], bool]:
        row = await (await conn.execute(LOOK, {"now": now})).fetchone()
        assert row is not None
        return list(row.behind or []), bool(row.expired)

    return await direct.run(one)


async def sweep(
    engine: AsyncEngine,
    live: Live,
    stop: asyncio.Event,
    every: float,
    known: Spaces | None = None,
    direct: Direct | None = None,
) -> None:
    """Catch up a workspace whose last prompt was lost or acked unfolded (no event in it
    may notify: ``Spaces.may_act``), so its checkpoint moves once a sweep rather than
    once a message, and mark done the approvals that expired. ``direct``: one look a
    sweep on psycopg itself, and a statement more only for what it found (ADR 0166)."""
    handle = build_handler(engine, live, known)
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
        try:
            now = datetime.now(UTC)
            workspaces, expired = await look(engine, direct, now)
            for workspace_id in workspaces:
                await handle(workspace_id, 0)
            if expired:
                await expire(engine, live, now)
        except Exception:
            log.exception("the notifier's sweep failed; it runs again in %.1fs", every)
