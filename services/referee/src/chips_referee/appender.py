"""The referee writes through the eventlog like any client (docs/architecture/design.md §6;
docs/adr/0083).

It appends as ``system`` under one credential of its own, with idempotency keys derived
from what it decides (the room, the job, the threshold), so deciding the same thing again
after a restart is answered ``duplicate`` and logs nothing twice. The sending and waiting
is the library's (``chips_common.nats.appender``).
"""

from __future__ import annotations

from typing import Any

from nats.aio.client import Client as NATS

from chips_common.append import Actor, AppendAnswer
from chips_common.ids import new_id
from chips_common.nats import appender
from chips_common.nats.appender import Unavailable
from chips_common.nats.streams import Names

__all__ = ["CREDENTIAL", "SYSTEM", "Appender", "Unavailable"]

SYSTEM = Actor(kind="system", id="system")
# The referee's keys are its own: no client's key can collide with them.
CREDENTIAL = "crd_referee"


class Appender(appender.Appender):
    def __init__(self, nc: NATS, names: Names, timeout: float) -> None:
        super().__init__(nc, names, timeout, new_id("ref").lower())

    async def append(
        self, workspace_id: str, key: str, events: list[dict[str, Any]]
    ) -> AppendAnswer:
        """Append ``events`` together as Chips, under ``key``; the eventlog's answer."""
        return await self.wait(await self.send(workspace_id, CREDENTIAL, SYSTEM, key, events))
