"""What the referee does with committed events (docs/architecture/design.md §6; docs/adr/0083,
0090).

It is prompted with a workspace and a seq and reads what it has not seen from the log.
It folds every room's events into what it keeps of the room (``rooms.py``: who works, the
lead, the last words, when the next thing is due), and after each usage in a room weighs
that room's job against its ceiling (``spend.py``). What it decides it appends through the
eventlog under deterministic keys; its checkpoint and rooms are saved in one transaction
after the appends are answered, so a crash in between decides the same again and logs
nothing twice.

What it read and wrote of each room's row it keeps in memory, beside the version of the
workspace's checkpoint row that transaction wrote (its ``xmin``). Every write of a room's
row writes that row too, in the same transaction, so when the checkpoint row it locks
still has that version, nobody has written a room since, and it folds on what it keeps
instead of reading the rooms again. Any other version (another replica, rows dropped, a
transaction that failed) and it reads them from their rows.

The common case, events that call for no row of a room to be read and no job to be
weighed (most message posts), goes on psycopg itself (``catch_up_direct``; docs/adr/0120):
the same statements in one transaction, without SQLAlchemy's cost per statement and per
checkout. Any other case is undone before anything is decided and done on the engine.
A person's post is not folded on its own at all (``may_wait``; docs/adr/0162): it goes
with the workspace's next fold, or a second later.

Its clock (``tick``) looks, every moment, for rooms whose moment has come, and first reads
the workspace's log up to its head, so it never hands over words a newer event took back.
It and the other two clocks (questions past their time, agents owed) share one look a
moment, one statement on psycopg itself (``run_clocks``; docs/adr/0166).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Text, bindparam, func, literal_column, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common.db import tables as t
from chips_common.db.direct import Conn, Direct, compiled
from chips_common.db.referee_tables import referee_checkpoints, referee_rooms
from chips_common.db.retry import once_more
from chips_common.db.spend_reads import read_job
from chips_common.rules.lead import is_agent
from chips_common.service.consumer import Handler
from chips_referee.appender import Appender
from chips_referee.rooms import (
    CHUNK,
    Clock,
    DirectRows,
    Kept,
    fold_read,
    fold_rooms,
    look_again,
    now_utc,
    read_room_events_direct,
)
from chips_referee.spend import crossing_events

log = logging.getLogger(__name__)

# Every event prompts it: any may end a turn, take the last words, or name a lead.
WANTED = None


def may_wait(event: Mapping[str, Any]) -> bool:
    """Whether folding ``event`` may wait for the workspace's next fold (docs/adr/0162;
    ``chips_common.service.held``). Pure.

    True of an event in no room (the fold reads rooms' events only), and of a post outside
    any turn (no run) by anybody but an agent or a harness: such a post starts, ends and
    is heard from no turn, so folding it tells nothing (``tell_working``) and weighs no
    job; what it changes of its room (the last words taken, who a person asked alone, a
    pause for spend ended) is read only by the room's later folds, which read the log in
    order from the checkpoint and so fold it first, and by the clock, which reads the log
    up to the head before it looks (``build_tick``).
    """
    if event.get("space_id") is None:
        return True
    if event.get("type") != "message.post" or event.get("run_id"):
        return False
    actor = event.get("actor")
    who = actor.get("id") if isinstance(actor, Mapping) else None
    return isinstance(who, str) and bool(who) and not is_agent(who)


# The statements of every event, built once (rooms.py says why).
_c = referee_checkpoints.c
_e = t.events.c
# The checkpoint row's version: the transaction that last wrote it.
_version = literal_column("xmin::text", Text).label("version")
LOCK_CHECKPOINT = (
    select(_c.seq, _version).where(_c.workspace_id == bindparam("workspace_id")).with_for_update()
)
# A look that wrote rooms and not the checkpoint: a new version all the same.
TOUCH_CHECKPOINT = (
    # (An update's bound names may not be its columns' own.)
    update(referee_checkpoints).where(_c.workspace_id == bindparam("ws")).values(seq=_c.seq)
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
).returning(_version)
# The same statements for psycopg itself, on the handler's common case (docs/adr/0120).
LOCK_CHECKPOINT_DIRECT = compiled(LOCK_CHECKPOINT)
SAVE_CHECKPOINT_DIRECT = compiled(SAVE_CHECKPOINT)


@dataclass(frozen=True)
class Known:
    """A workspace's rooms as the transaction that wrote checkpoint ``version`` left
    their rows (None: no row)."""

    version: str
    rooms: dict[str, Kept | None]


class Memory:
    """What the referee knows of each workspace's rooms, and as of which version."""

    def __init__(self) -> None:
        self.workspaces: dict[str, Known] = {}

    def rooms_at(self, workspace_id: str, version: str | None) -> dict[str, Kept | None]:
        """A copy of the rooms known at ``version`` (nothing, at any other)."""
        known = self.workspaces.get(workspace_id)
        if known is None or version is None or known.version != version:
            return {}
        return dict(known.rooms)

    def keep(self, workspace_id: str, known: Known | None) -> None:
        """After a commit: what it wrote, or forget the workspace (None)."""
        if known is None:
            self.workspaces.pop(workspace_id, None)
        else:
            self.workspaces[workspace_id] = known


async def catch_up(
    conn: AsyncConnection,
    appender: Appender,
    workspace_id: str,
    upto: int | None,
    clock: Clock,
    memory: Memory,
) -> Known | None:
    """Read the workspace's log from the checkpoint to ``upto`` (None: its head), holding
    the checkpoint's row, and do what it calls for; what to keep once it commits (None:
    what is kept still holds)."""
    at = {"workspace_id": workspace_id}
    row = (await conn.execute(LOCK_CHECKPOINT, at)).first()
    done, version = (row.seq, row.version) if row is not None else (0, None)
    if upto is None:
        upto = (await conn.execute(HEAD, at)).scalar() or 0
    if done >= upto:
        return None
    rooms = memory.rooms_at(workspace_id, version)
    spent_in = await fold_rooms(conn, appender, workspace_id, done, upto, clock, rooms)
    await weigh_spend(conn, appender, workspace_id, spent_in)
    written = (await conn.execute(SAVE_CHECKPOINT, {**at, "seq": upto})).scalar_one()
    return Known(written, rooms)


class ForTheEngine(Exception):
    """What the events call for is done on the engine: rooms' rows to read (a room not
    kept in memory at the checkpoint's version), a job to weigh, or more than a chunk of
    the log. Raised before anything is appended; the transaction is undone."""


async def catch_up_direct(
    conn: Conn,
    appender: Appender,
    workspace_id: str,
    upto: int,
    clock: Clock,
    memory: Memory,
) -> Known | None:
    """:func:`catch_up` to ``upto`` on psycopg itself, in one transaction, for events
    whose rooms are all kept in memory and with no usage among them (docs/adr/0120): the
    same statements, locks and writes as on the engine. Raises :class:`ForTheEngine` for
    any other case."""
    at = {"workspace_id": workspace_id}
    async with conn.transaction():
        row = await (await conn.execute(LOCK_CHECKPOINT_DIRECT, at)).fetchone()
        done, version = (row.seq, row.version) if row is not None else (0, None)
        if done >= upto:
            return None
        if upto - done > CHUNK:
            raise ForTheEngine
        rooms = memory.rooms_at(workspace_id, version)
        read = await read_room_events_direct(conn, workspace_id, done, upto)
        if read.spent_in or any(s not in rooms for s in read.by_room):
            raise ForTheEngine
        await fold_read(DirectRows(conn), appender, workspace_id, read, clock, rooms)
        saved = await (await conn.execute(SAVE_CHECKPOINT_DIRECT, {**at, "seq": upto})).fetchone()
        assert saved is not None
    return Known(saved.version, rooms)


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


def build_handler(
    engine: AsyncEngine,
    appender: Appender,
    clock: Clock,
    memory: Memory,
    direct: Direct | None = None,
) -> Handler:
    """``direct``: psycopg connections for the common case (``catch_up_direct``); the
    engine does the rest, and everything when None."""

    async def handle(workspace_id: str, seq: int) -> None:
        if direct is not None:

            async def work_direct(conn: Conn) -> Known | None:
                return await catch_up_direct(conn, appender, workspace_id, seq, clock, memory)

            try:
                # A connection found broken sends the work again on a new one, as
                # once_more does below.
                known = await direct.run(work_direct)
            except ForTheEngine:
                pass
            else:
                if known is not None:
                    memory.keep(workspace_id, known)
                return

        async def work(conn: AsyncConnection) -> None:
            known = await catch_up(conn, appender, workspace_id, seq, clock, memory)
            await conn.commit()
            if known is not None:
                memory.keep(workspace_id, known)

        # The engine does not ping a connection as it leaves the pool; a dead one fails
        # the first statement, before anything is decided, and the work goes again on a
        # new one (and what was decided twice is answered duplicate anyway).
        await once_more(engine, work)

    return handle


def build_tick(
    engine: AsyncEngine, appender: Appender, clock: Clock, memory: Memory
) -> Callable[[list[str] | None], Coroutine[Any, Any, int]]:
    """One look at every workspace with a room whose moment has come; how many it saw."""

    async def due(conn: AsyncConnection) -> list[str]:
        # One autocommit statement: a look that finds nothing (most of them, twice a
        # second) costs no BEGIN and ROLLBACK (docs/adr/0162).
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        return sorted((await conn.execute(DUE_WORKSPACES, {"now": now_utc()})).scalars())

    async def tick(workspaces: list[str] | None = None) -> int:
        """``workspaces``: those the clock's one look found due (``Look``); None, read
        them here."""
        if workspaces is None:
            workspaces = await once_more(engine, due)
        for workspace_id in workspaces:

            async def work(conn: AsyncConnection, workspace_id: str = workspace_id) -> None:
                known = await catch_up(conn, appender, workspace_id, None, clock, memory)
                wrote = await look_again(conn, appender, workspace_id, clock)
                if wrote:  # the rooms' rows moved on: so does the checkpoint's version
                    await conn.execute(TOUCH_CHECKPOINT, {"ws": workspace_id})
                await conn.commit()
                # What the look wrote is read again by the next event (looks are rare);
                # a look that wrote nothing leaves what is kept as it was.
                if wrote or known is not None:
                    memory.keep(workspace_id, None if wrote else known)

            await once_more(engine, work)
        return len(workspaces)

    return tick


# The clocks' one look (docs/adr/0166): what each of them has to do now, in one autocommit
# statement on psycopg itself, so an idle referee sends one statement a tick rather than
# three through SQLAlchemy. Each clause is the clock's own: the rooms due (``build_tick``),
# a question past its time (``questions.OVERDUE``), a workspace owed its agents
# (``give.build_give_tick``).
LOOK = (
    "SELECT ARRAY(SELECT workspace_id FROM referee_rooms WHERE due_at <= %(now)s"
    " GROUP BY workspace_id ORDER BY workspace_id) AS due,"
    " EXISTS(SELECT 1 FROM run_cards WHERE kind = 'question' AND answered_by IS NULL"
    " AND expires_at <= now()) AS overdue,"
    " EXISTS(SELECT 1 FROM agents_to_give) AS give"
)


@dataclass(frozen=True)
class Look:
    """What one look found for the clocks to do."""

    due: list[str]
    overdue: bool
    give: bool


async def look(direct: Direct) -> Look:
    async def one(conn: Conn) -> Look:
        row = await (await conn.execute(LOOK, {"now": now_utc()})).fetchone()
        assert row is not None
        return Look(list(row.due or []), bool(row.overdue), bool(row.give))

    return await direct.run(one)


async def run_clocks(
    direct: Direct,
    tick: Callable[[list[str] | None], Coroutine[Any, Any, int]],
    expiry_tick: Callable[[], Coroutine[Any, Any, int]],
    give_tick: Callable[[], Coroutine[Any, Any, int]],
    every: float,
    stop: asyncio.Event,
) -> None:
    """The three clocks on one look every ``every`` seconds (docs/adr/0166): a clock with
    something to do runs it as its own task, as it ran on its own loop before, so a slow
    one holds back none of the others; a clock still running is not started again. A
    failed look or tick is logged and tried again at the next."""
    running: dict[str, asyncio.Task[int]] = {}

    def start(name: str, work: Callable[[], Coroutine[Any, Any, int]]) -> None:
        task = running.get(name)
        if task is not None and not task.done():
            return
        running[name] = asyncio.create_task(work())
        running[name].add_done_callback(lambda t: _logged(name, t))

    try:
        while not stop.is_set():
            try:
                found = await look(direct)
            except Exception:
                log.exception("the referee's clock failed a look; trying again")
            else:
                if found.due:
                    start("rooms", functools.partial(tick, found.due))
                if found.overdue:
                    start("questions", expiry_tick)
                if found.give:
                    start("give", give_tick)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=every)
    except BaseException:  # cancelled: so are the clocks' looks
        for task in running.values():
            task.cancel()
        raise
    finally:
        # Stopped: a look under way finishes, as the clocks' own loops let it.
        await asyncio.gather(*running.values(), return_exceptions=True)


def _logged(name: str, task: asyncio.Task[int]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error(
            "the referee's %s clock failed a look; trying again",
            name,
            exc_info=task.exception(),
        )
