"""What the referee does with committed events (DESIGN.md §6; docs/adr/0083, 0090).

It is prompted with a workspace and a seq and reads what it has not seen from the log.
It folds every room's events into what it keeps of the room (``rooms.py``: who works, the
lead, the last words, when the next thing is due), and after each usage in a room weighs
that room's job against its ceiling (``spend.py``). What it decides it appends through the
eventlog under deterministic keys; its checkpoint and rooms are saved in one transaction
after the appends are answered, so a crash in between decides the same again and logs
nothing twice.

Its clock (``tick``) looks, every moment, for rooms whose moment has come, and first reads
the workspace's log up to its head, so it never hands over words a newer event took back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from sqlalchemy import bindparam, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common.db import tables as t
from chips_common.db.referee_tables import referee_checkpoints, referee_rooms
from chips_common.db.retry import once_more
from chips_common.db.spend_reads import read_job
from chips_common.service.consumer import Handler
from chips_referee.appender import Appender
from chips_referee.rooms import Clock, fold_rooms, look_again, now_utc
from chips_referee.spend import crossing_events

log = logging.getLogger(__name__)

# Every event prompts it: any may end a turn, take the last words, or name a lead.
WANTED = None


# The statements of every event, built once (rooms.py says why).
_c = referee_checkpoints.c
_e = t.events.c
LOCK_CHECKPOINT = (
    select(_c.seq).where(_c.workspace_id == bindparam("workspace_id")).with_for_update()
)
HEAD = select(func.max(_e.seq)).where(_e.workspace_id == bindparam("workspace_id"))
DUE_WORKSPACES = (
    select(referee_rooms.c.workspace_id)
    .where(referee_rooms.c.due_at <= bindparam("now"))
    .group_by(referee_rooms.c.workspace_id)
)
_upsert = pg_insert(referee_checkpoints).values(
    workspace_id=bindparam("workspace_id"), seq=bindparam("seq")
)
SAVE_CHECKPOINT = _upsert.on_conflict_do_update(
    index_elements=["workspace_id"], set_={"seq": _upsert.excluded.seq}
)


async def catch_up(
    conn: AsyncConnection, appender: Appender, workspace_id: str, upto: int | None, clock: Clock
) -> None:
    """Read the workspace's log from the checkpoint to ``upto`` (None: its head), holding
    the checkpoint's row, and do what it calls for."""
    at = {"workspace_id": workspace_id}
    done = (await conn.execute(LOCK_CHECKPOINT, at)).scalar() or 0
    if upto is None:
        upto = (await conn.execute(HEAD, at)).scalar() or 0
    if done >= upto:
        return
    spent_in = await fold_rooms(conn, appender, workspace_id, done, upto, clock)
    await weigh_spend(conn, appender, workspace_id, spent_in)
    await conn.execute(SAVE_CHECKPOINT, {**at, "seq": upto})


async def weigh_spend(
    conn: AsyncConnection, appender: Appender, workspace_id: str, spent_in: set[str]
) -> None:
    """After usage in a room, what its job calls for (docs/adr/0083)."""
    for space_id in sorted(spent_in):
        # The job as it stands now: one a person has since ended is not weighed.
        read = await read_job(conn, workspace_id, space_id)
        crossing = crossing_events(space_id, read)
        if crossing is None:
            continue
        key, events = crossing
        answer = await appender.append(workspace_id, key, events)
        if not answer.ok:
            log.warning(
                "the referee's %s in %s was refused: %s %s",
                key,
                workspace_id,
                answer.code,
                answer.message,
            )


def build_handler(engine: AsyncEngine, appender: Appender, clock: Clock) -> Handler:
    async def handle(workspace_id: str, seq: int) -> None:
        async def work(conn: AsyncConnection) -> None:
            await catch_up(conn, appender, workspace_id, seq, clock)
            await conn.commit()

        # The engine does not ping a connection as it leaves the pool; a dead one fails
        # the first statement, before anything is decided, and the work goes again on a
        # new one (and what was decided twice is answered duplicate anyway).
        await once_more(engine, work)

    return handle


def build_tick(
    engine: AsyncEngine, appender: Appender, clock: Clock
) -> Callable[[], Awaitable[int]]:
    """One look at every workspace with a room whose moment has come; how many it saw."""

    async def due(conn: AsyncConnection) -> list[str]:
        return sorted((await conn.execute(DUE_WORKSPACES, {"now": now_utc()})).scalars())

    async def tick() -> int:
        workspaces = await once_more(engine, due)
        for workspace_id in workspaces:

            async def work(conn: AsyncConnection, workspace_id: str = workspace_id) -> None:
                await catch_up(conn, appender, workspace_id, None, clock)
                await look_again(conn, appender, workspace_id, clock)
                await conn.commit()

            await once_more(engine, work)
        return len(workspaces)

    return tick


async def run_clock(tick: Callable[[], Awaitable[int]], every: float, stop: asyncio.Event) -> None:
    """Tick until ``stop``; a failed look is logged and tried again at the next."""
    while not stop.is_set():
        try:
            await tick()
        except Exception:
            log.exception("the referee's clock failed a look; trying again")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=every)
