"""The referee writes through the eventlog like any client (DESIGN.md §6; docs/adr/0083).

It appends as ``system`` under one credential of its own, with idempotency keys derived
from what it decides (the room, the job, the threshold), so deciding the same thing again
after a restart is answered ``duplicate`` and logs nothing twice.
"""

from __future__ import annotations

import asyncio
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext

from chips_common.append import Actor, AppendAnswer, AppendRequest
from chips_common.ids import new_id
from chips_common.nats.streams import HDR_REPLY, Names
from chips_common.otel import inject

SYSTEM = Actor(kind="system", id="system")
# The referee's keys are its own: no client's key can collide with them.
CREDENTIAL = "crd_referee"


class Unavailable(Exception):
    """The log did not answer in time."""


class Appender:
    def __init__(self, nc: NATS, js: JetStreamContext, names: Names, timeout: float) -> None:
        self.nc = nc
        self.js = js
        self.names = names
        self.timeout = timeout
        self.reply_prefix = names.reply_subject(new_id("ref").lower())
        self.waiting: dict[str, asyncio.Future[AppendAnswer]] = {}
        self.sub: Subscription | None = None

    async def start(self) -> None:
        self.sub = await self.nc.subscribe(f"{self.reply_prefix}.*", cb=self._on_reply)

    async def stop(self) -> None:
        if self.sub is not None:
            await self.sub.unsubscribe()

    async def _on_reply(self, msg: Msg) -> None:
        answer = AppendAnswer.model_validate_json(msg.data)
        future = self.waiting.pop(answer.request_id, None)
        if future is not None and not future.done():
            future.set_result(answer)

    async def append(
        self, workspace_id: str, key: str, events: list[dict[str, Any]]
    ) -> AppendAnswer:
        """Append ``events`` together as Chips, under ``key``; the eventlog's answer."""
        request = AppendRequest(
            request_id=new_id("req"),
            workspace_id=workspace_id,
            credential_id=CREDENTIAL,
            actor=SYSTEM,
            idempotency_key=key,
            events=events,
        )
        future: asyncio.Future[AppendAnswer] = asyncio.get_running_loop().create_future()
        self.waiting[request.request_id] = future
        try:
            await self.js.publish(
                self.names.append_subject(workspace_id),
                request.model_dump_json().encode(),
                headers=inject({HDR_REPLY: f"{self.reply_prefix}.{request.request_id}"}),
            )
            return await asyncio.wait_for(future, self.timeout)
        except Exception:
            raise Unavailable from None
        finally:
            self.waiting.pop(request.request_id, None)
