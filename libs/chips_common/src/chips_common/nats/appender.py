"""Appending through the eventlog from a service, and waiting for the log's answer.

A service that writes to the log (the referee, attachments) does it as a gateway does:
a JetStream publish on the workspace's append subject, with a reply subject of this
process's in its headers; the eventlog answers there after its commit. The gateway's own
client (``chips_gateway.appender``) adds pipelining and its refusals on top of the same
shape.
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


class Unavailable(Exception):
    """The log did not answer in time."""


class Appender:
    """``start`` it, ``append`` through it, ``stop`` it. ``tag`` names its reply subject
    (``ref``, ``att``): one per process, made unique."""

    def __init__(
        self, nc: NATS, js: JetStreamContext, names: Names, timeout: float, tag: str
    ) -> None:
        self.nc = nc
        self.js = js
        self.names = names
        self.timeout = timeout
        self.reply_prefix = names.reply_subject(new_id(tag).lower())
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

    async def send(
        self,
        workspace_id: str,
        credential_id: str,
        actor: Actor,
        events: list[dict[str, Any]],
        key: str,
    ) -> AppendAnswer:
        """Append ``events`` together under ``key``; the eventlog's answer. Raises
        :class:`Unavailable` when it does not come in time."""
        request = AppendRequest(
            request_id=new_id("req"),
            workspace_id=workspace_id,
            credential_id=credential_id,
            actor=actor,
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
