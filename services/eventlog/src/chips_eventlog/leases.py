"""Which eventlog replica owns which append partition (DESIGN.md §3).

A replica holds a partition through a Postgres advisory lock on one long-lived connection
of its own: while the connection lives, no other replica can take the partition; when the
replica dies, Postgres drops the connection and the lock with it, and another replica
takes the partition on its next look. Each replica also holds a "member" lock, so every
replica can count the live ones and aim for its fair share: it takes free partitions up
to ``ceil(partitions / replicas)`` and hands back what it holds beyond that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_eventlog.state import DoorState

# Two-int advisory lock keys: (class, id). The lock space is per database, so two Chips
# installs on one server, in their own databases, never meet here.
MEMBER_CLASS = 0x43480001  # a replica slot: ids 0..MAX_REPLICAS-1
PARTITION_CLASS = 0x43480002  # a partition: ids 0..partitions-1
MAX_REPLICAS = 64


@dataclass
class Held:
    """A partition this replica serves: the door state of its workspaces lives here."""

    partition: int
    states: dict[str, DoorState] = field(default_factory=dict)


class Leases:
    def __init__(self, engine: AsyncEngine, partitions: int) -> None:
        self.engine = engine
        self.partitions = partitions
        self.conn: AsyncConnection | None = None
        self.slot: int | None = None

    async def open(self) -> None:
        conn = await self.engine.connect()
        self.conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        for slot in range(MAX_REPLICAS):
            if await self._try(MEMBER_CLASS, slot):
                self.slot = slot
                return
        raise RuntimeError(f"more than {MAX_REPLICAS} eventlog replicas")

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()  # releases every lock this replica held
            self.conn = None

    async def _try(self, cls: int, key: int) -> bool:
        assert self.conn is not None
        got = await self.conn.execute(
            text("SELECT pg_try_advisory_lock(:cls, :key)"), {"cls": cls, "key": key}
        )
        return bool(got.scalar())

    async def alive(self) -> bool:
        """Whether the lease connection still answers (if not, every lease is gone)."""
        try:
            assert self.conn is not None
            await self.conn.execute(text("SELECT 1"))
            return True
        except Exception:
            return False

    async def replicas(self) -> int:
        assert self.conn is not None
        count = await self.conn.execute(
            text(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND classid = :cls AND objsubid = 2"
                " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            ),
            {"cls": MEMBER_CLASS},
        )
        return max(1, int(count.scalar() or 1))

    async def release(self, partition: int) -> None:
        assert self.conn is not None
        await self.conn.execute(
            text("SELECT pg_advisory_unlock(:cls, :key)"),
            {"cls": PARTITION_CLASS, "key": partition},
        )

    async def rebalance(self, owned: set[int]) -> tuple[set[int], set[int]]:
        """The partitions to start and to hand back, given those this replica runs."""
        share = math.ceil(self.partitions / await self.replicas())
        give_back = set(sorted(owned, reverse=True)[: max(0, len(owned) - share)])
        take: set[int] = set()
        for partition in range(self.partitions):
            if len(owned) - len(give_back) + len(take) >= share:
                break
            if partition not in owned and await self._try(PARTITION_CLASS, partition):
                take.add(partition)
        return take, give_back
