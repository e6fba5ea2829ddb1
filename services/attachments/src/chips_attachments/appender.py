"""Appending the fetch audit through the eventlog, and waiting for it to be logged.

A fetch by a harness is an event in the room (docs/product/messages.md, Attachments); its bytes
are sent only once the eventlog has logged it, so no fetch goes unrecorded. The request
travels like a gateway's: a JetStream publish on the workspace's append subject with a
reply subject of this replica's in its headers (the library's, ``chips_common.nats.appender``).
"""

from __future__ import annotations

from nats.aio.client import Client as NATS

from chips_common.append import Actor, AppendAnswer
from chips_common.events import JsonObject
from chips_common.ids import new_id
from chips_common.nats import appender
from chips_common.nats.appender import Unavailable
from chips_common.nats.streams import Names

__all__ = ["Appender", "Unavailable"]


class Appender(appender.Appender):
    def __init__(self, nc: NATS, names: Names, timeout: float) -> None:
        super().__init__(nc, names, timeout, new_id("att").lower())

    async def append(
        self,
        workspace_id: str,
        credential_id: str,
        actor: Actor,
        event: JsonObject,
        key: str | None = None,
    ) -> AppendAnswer:
        """Append ``event``; under ``key`` when deciding it again must log nothing twice."""
        future = await self.send(
            workspace_id, credential_id, actor, key or new_id("fetch"), [event]
        )
        return await self.wait(future)
