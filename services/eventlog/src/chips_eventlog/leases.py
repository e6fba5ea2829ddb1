"""Which eventlog replica writes which append partition: leases that expire (docs/adr/0021).

A partition's lease is a row of ``eventlog_leases``: its holder, an epoch, and when it
expires. The holder renews it by heartbeat, every third of the time to live. A replica
that stops renewing (killed, paused by SIGSTOP, hung) loses it when it expires: another
replica takes the row with ``epoch + 1``. Every append transaction checks, once it holds
the workspace's head row, that the lease row still names this replica and its epoch
(:func:`fence`); so a replica that lost its lease can never write, whatever it believes.
A transaction that passed the fence before a takeover still holds the head row: the new
holder's first transaction on that workspace waits for it, and reads the door state after
it (or after Postgres ends it: ``idle_in_transaction_session_timeout``).

Each replica also keeps a row in ``eventlog_replicas``, renewed by the same heartbeat, so
every replica can count the live ones and aim for its fair share: it takes free or
expired partitions up to ``ceil(partitions / replicas)`` and hands back what it holds
beyond that. Times are the database's clock, so replicas' clocks need not agree.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import secrets
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_eventlog.state import DoorState


class Fenced(Exception):
    """The lease this replica wrote under is gone: the transaction must not commit."""


log = logging.getLogger(__name__)


@dataclass
class Held:
    """A partition this replica holds, under ``epoch``, and the door state of its
    workspaces, which lives exactly as long as the lease does."""

    partition: int
    epoch: int = 0
    holder: str = ""
    # Until when (this process's monotonic clock) the last renewal holds for certain.
    valid_until: float = math.inf
    states: dict[str, DoorState] = field(default_factory=dict)
    # A commit found the epoch moved on, or the heartbeat found the lease gone.
    fenced: bool = False
    lost: bool = False
    # When (monotonic) a batch decided from memory last met a key already in the table:
    # the clients are re-sending (after a takeover, say), so batches read their keys
    # first for a while rather than fail once each (docs/adr/0105).
    resent_at: float = -math.inf

    def fresh(self) -> bool:
        return not (self.fenced or self.lost) and time.monotonic() < self.valid_until


async def fence(conn: AsyncConnection, held: Held) -> None:
    """Refuse to go on unless ``held``'s lease is still this replica's, at its epoch.

    Called with the workspace's head row locked. A plain read: it takes no lock on the
    lease row, so the heartbeat renewing it never waits for an append in flight.
    """
    if not held.holder:  # not under a lease (a test's own appender)
        return
    found = await conn.execute(
        text("SELECT 1 FROM eventlog_leases WHERE partition = :p AND holder = :h AND epoch = :e"),
        {"p": held.partition, "h": held.holder, "e": held.epoch},
    )
    if found.first() is None:
        held.fenced = True
        raise Fenced(f"partition {held.partition}: the lease at epoch {held.epoch} is gone")


class Leases:
    def __init__(self, engine: AsyncEngine, partitions: int, ttl: float) -> None:
        self.engine = engine
        self.partitions = partitions
        self.ttl = ttl
        self.holder = f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(4)}"
        self.conn: AsyncConnection | None = None
        self.held: dict[int, Held] = {}
        # The heartbeat runs in its own task, beside the rebalancing: one statement at a
        # time on the lease connection.
        self.lock = asyncio.Lock()

    async def connect(self) -> None:
        conn = await self.engine.connect()
        try:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            # A takeover never waits long on a row a stopped replica's transaction holds:
            # it gives up and tries again at the next look.
            await conn.execute(text(f"SET lock_timeout = {max(1, int(self.ttl * 250))}"))
        except BaseException:
            with contextlib.suppress(Exception):
                await conn.close()
            raise
        self.conn = conn

    async def _live(self) -> AsyncConnection:
        """The lease connection, opened again if the last one was dropped (call it under
        ``lock``). While Postgres is away this raises, and the caller tries later."""
        if self.conn is None:
            await self.connect()
        assert self.conn is not None
        return self.conn

    async def _drop(self) -> None:
        """Forget a connection that failed (Postgres restarted, failed over, or cut it):
        the next statement opens a new one, so the leases outlive the outage."""
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()

    async def _execute(self, statement: Any, params: Mapping[str, object] | None = None) -> Any:
        """One statement on the lease connection (call it under ``lock``); a connection
        that failed under it is dropped, and the error raised."""
        conn = await self._live()
        try:
            return await conn.execute(statement, params)
        except Exception:
            await self._drop()
            raise

    async def reopen(self) -> None:
        """Drop the connection after it failed; the next statement opens a new one, and
        the leases are renewed on it, or found lost, at the next heartbeat."""
        async with self.lock:
            await self._drop()

    async def open(self) -> None:
        await self.connect()
        assert self.conn is not None
        await self.conn.execute(
            text(
                "INSERT INTO eventlog_leases (partition, holder, epoch, expires_at)"
                " SELECT p, NULL, 0, '-infinity' FROM generate_series(0, :n - 1) AS p"
                " ON CONFLICT (partition) DO NOTHING"
            ),
            {"n": self.partitions},
        )
        await self.conn.execute(
            text(
                "DELETE FROM eventlog_replicas"
                " WHERE expires_at < clock_timestamp() - interval '1 hour'"
            )
        )
        await self.heartbeat()

    async def close(self) -> None:
        """Hand back every lease at once (another replica need not wait for expiry).

        With Postgres away they cannot be handed back: they expire by themselves.
        """
        try:
            async with self.lock:
                await self._execute(
                    text(
                        "UPDATE eventlog_leases SET holder = NULL, expires_at = '-infinity'"
                        " WHERE holder = :me"
                    ),
                    {"me": self.holder},
                )
                await self._execute(
                    text("DELETE FROM eventlog_replicas WHERE id = :me"), {"me": self.holder}
                )
        except Exception as exc:
            log.warning("could not hand the leases back (%r); they expire by themselves", exc)
        finally:
            await self._drop()
            self.held.clear()

    async def heartbeat(self) -> set[int]:
        """Renew this replica and its leases; return the partitions it no longer holds."""
        async with self.lock:
            return await self._heartbeat()

    async def _heartbeat(self) -> set[int]:
        sent = time.monotonic()
        await self._execute(
            text(
                "INSERT INTO eventlog_replicas (id, expires_at)"
                " VALUES (:me, clock_timestamp() + make_interval(secs => :ttl))"
                " ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at"
            ),
            {"me": self.holder, "ttl": self.ttl},
        )
        if not self.held:
            return set()
        rows = await self._execute(
            text(
                "UPDATE eventlog_leases SET expires_at = clock_timestamp()"
                " + make_interval(secs => :ttl)"
                " WHERE holder = :me AND partition = ANY(:parts) RETURNING partition, epoch"
            ),
            {"me": self.holder, "ttl": self.ttl, "parts": sorted(self.held)},
        )
        renewed = {
            row.partition
            for row in rows
            if row.partition in self.held and self.held[row.partition].epoch == row.epoch
        }
        for partition in renewed:
            self.held[partition].valid_until = sent + self.ttl
        return set(self.held) - renewed

    def forget(self, partition: int) -> None:
        self.held.pop(partition, None)

    async def replicas(self) -> int:
        async with self.lock:
            count = await self._execute(
                text("SELECT count(*) FROM eventlog_replicas WHERE expires_at > clock_timestamp()")
            )
        return max(1, int(count.scalar() or 1))

    async def release(self, partition: int) -> None:
        """Hand a partition back: free at once for whoever looks next."""
        held = self.held.pop(partition, None)
        if held is None:
            return
        async with self.lock:
            await self._release(held)

    async def _release(self, held: Held) -> None:
        await self._execute(
            text(
                "UPDATE eventlog_leases SET holder = NULL, expires_at = '-infinity'"
                " WHERE partition = :p AND holder = :me AND epoch = :e"
            ),
            {"p": held.partition, "me": self.holder, "e": held.epoch},
        )

    async def take(self, partition: int) -> Held | None:
        """Take a free or expired partition, with the next epoch; None if it is held."""
        sent = time.monotonic()
        try:
            async with self.lock:
                row = (
                    await self._execute(
                        text(
                            "UPDATE eventlog_leases SET holder = :me, epoch = epoch + 1,"
                            " expires_at = clock_timestamp() + make_interval(secs => :ttl)"
                            " WHERE partition = :p"
                            " AND (holder IS NULL OR expires_at < clock_timestamp())"
                            " RETURNING epoch"
                        ),
                        {"p": partition, "me": self.holder, "ttl": self.ttl},
                    )
                ).first()
        except Exception:  # lock_timeout (another replica is on the row): look again later
            return None
        if row is None:
            return None
        held = Held(partition, row.epoch, self.holder, sent + self.ttl)
        self.held[partition] = held
        return held

    async def rebalance(self, owned: set[int]) -> tuple[list[Held], set[int]]:
        """The partitions to start (taken) and to hand back, given those this replica runs."""
        share = math.ceil(self.partitions / await self.replicas())
        give_back = set(sorted(owned, reverse=True)[: max(0, len(owned) - share)])
        taken: list[Held] = []
        for partition in range(self.partitions):
            if len(owned) - len(give_back) + len(taken) >= share:
                break
            if partition not in owned and (held := await self.take(partition)) is not None:
                taken.append(held)
        return taken, give_back
