"""The hot statements on psycopg itself, beside SQLAlchemy's engines (docs/adr/0120).

A statement through SQLAlchemy's async engine pays for the pool's checkout and return,
the greenlet that carries the call into the driver, the execution context and the result
wrapper: measured on this project's machine, 0.45-0.7 ms of CPU more than the same
statement on psycopg alone (``bench/floor.py``, stages ``pg`` and ``pg-direct``), and
more than the round trip itself. The few statements every message pays for (who a token
is, the eventlog's guarded write) go here instead. They are still written once, as
SQLAlchemy Core or as text, and compiled once (:func:`compiled`); the tables, the
migrations and every other statement stay with SQLAlchemy.

:class:`Direct` keeps up to ``size`` autocommit connections, hands out the one used last
(its socket and caches are warm), and opens one when none is free. A connection that
fails broken is closed and dropped, and :meth:`Direct.run` sends the work once more on
a new one, as ``chips_common.db.retry.once_more`` does for an engine: only what is safe
to send twice goes through it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypedDict, TypeVar

import psycopg
from psycopg.rows import namedtuple_row
from sqlalchemy import ClauseElement
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg

T = TypeVar("T")
Conn = psycopg.AsyncConnection[Any]
_DIALECT = PGDialect_psycopg()  # type: ignore[no-untyped-call]


def plain_url(url: str) -> str:
    """An SQLAlchemy URL (``postgresql+psycopg://``) as psycopg itself takes it."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def compiled(statement: ClauseElement) -> str:
    """A Core statement or ``text()`` as psycopg's SQL, with ``%(name)s`` placeholders
    for its bound parameters (the names SQLAlchemy gave them)."""
    return str(statement.compile(dialect=_DIALECT))


class ConnectArgs(TypedDict, total=False):
    """What a psycopg connection is opened with beside its URL: server settings
    (``-c name=value``), and when to prepare a statement (None: never)."""

    options: str
    prepare_threshold: int | None


class Direct:
    """A few psycopg connections in autocommit, for statements sent on every message."""

    # The class its connections are made of (a test may count what they send).
    connection_class: type[Conn] = psycopg.AsyncConnection

    def __init__(self, url: str, *, size: int = 8, options: str | None = None) -> None:
        self.url = plain_url(url)
        self.size = size
        self.options = options
        self.idle: list[Conn] = []
        self.opened = 0
        self.freed = asyncio.Condition()
        self.closed = False
        # How many are in a block under ``freed`` (holding it, waiting for it, or waiting on
        # it). At none, nobody holds or awaits the lock nor waits for a connection, so a
        # connection is taken or given back as the blocks would, without the lock (ADR 0167).
        self.inside = 0

    async def _open(self) -> Conn:
        extra: ConnectArgs = {"options": self.options} if self.options else {}
        return await self.connection_class.connect(
            self.url, autocommit=True, row_factory=namedtuple_row, **extra
        )

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Conn]:
        """A connection of its own for the block; one that broke in it is dropped."""
        conn = await self._take()
        try:
            yield conn
        finally:
            await self._give_back(conn)

    async def run(self, work: Callable[[Conn], Awaitable[T]]) -> T:
        """``work`` on a connection; once more on a new one if that one was found broken
        (Postgres restarted, or closed it while it sat idle)."""
        conn = await self._take()
        try:
            result = await work(conn)
        except psycopg.OperationalError:
            broken = conn.broken or conn.closed
            await self._give_back(conn)
            if not broken:
                raise
            # What cut this one (a restart of Postgres, a failover) cut the idle ones too:
            # a pool asked rarely (who a token is, once remembered) may hold only those.
            await self._drop_idle()
        except BaseException:
            await self._give_back(conn)
            raise
        else:
            await self._give_back(conn)
            return result
        async with self.connection() as conn:
            return await work(conn)

    async def _drop_idle(self) -> None:
        """Close every idle connection; the next ones are opened afresh."""
        idle, self.idle = self.idle, []
        if not idle:
            return
        for conn in idle:
            with contextlib.suppress(Exception):
                await conn.close()
        self.inside += 1
        try:
            async with self.freed:
                self.opened -= len(idle)
                self.freed.notify(len(idle))
        finally:
            self.inside -= 1

    async def _take(self) -> Conn:
        if not self.inside and self.idle and not self.closed:
            return self.idle.pop()
        self.inside += 1
        try:
            async with self.freed:
                while True:
                    if self.closed:
                        raise RuntimeError("this Direct is closed")
                    if self.idle:
                        return self.idle.pop()
                    if self.opened < self.size:
                        self.opened += 1
                        break
                    await self.freed.wait()
        finally:
            self.inside -= 1
        try:
            return await self._open()
        except BaseException:
            self.inside += 1
            try:
                async with self.freed:
                    self.opened -= 1
                    self.freed.notify()
            finally:
                self.inside -= 1
            raise

    async def _give_back(self, conn: Conn) -> None:
        unusable = conn.broken or conn.closed or self.closed
        if not unusable and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            # A block left a transaction open (it failed inside one): end it, or drop it.
            try:
                await conn.rollback()
            except psycopg.Error:
                unusable = True
        if not unusable and not self.inside and not self.closed:
            self.idle.append(conn)  # nobody waits to be notified
            return
        self.inside += 1
        try:
            async with self.freed:
                if unusable:
                    self.opened -= 1
                    if not conn.closed:
                        await conn.close()
                else:
                    self.idle.append(conn)
                self.freed.notify()
        finally:
            self.inside -= 1

    async def close(self) -> None:
        self.inside += 1
        try:
            async with self.freed:
                self.closed = True
                idle, self.idle = self.idle, []
                self.opened -= len(idle)
                self.freed.notify_all()
        finally:
            self.inside -= 1
        for conn in idle:
            await conn.close()


class _Recorded(psycopg.AsyncConnection[Any]):
    """A connection that notes each statement in its Direct's ``sent``."""

    sent: list[str]

    async def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        self.sent.append(str(query))
        return await super().execute(query, *args, **kwargs)


class RecordingDirect(Direct):
    """A :class:`Direct` whose connections note every statement they send, in order, in
    :attr:`sent`: for the tests and benches that count what went on psycopg."""

    connection_class = _Recorded

    def __init__(self, url: str, *, size: int = 8, options: str | None = None) -> None:
        super().__init__(url, size=size, options=options)
        self.sent: list[str] = []

    async def _open(self) -> Conn:
        conn = await super()._open()
        assert isinstance(conn, _Recorded)
        conn.sent = self.sent
        return conn
