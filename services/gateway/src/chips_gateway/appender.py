"""Sending append requests to the eventlog and waiting for its answers.

Each request is a JetStream publish on ``chips.append.<workspace>`` whose headers name
this replica's reply subject; the eventlog answers there after its commit. Many requests
may be in flight at once (DESIGN.md §2, Pipelining): a request is written to the stream
without waiting for the stream's ack (it comes back beside the answer, and a refusal by
the stream answers the request with ``unavailable``), so a socket's requests follow one
another into the stream in the order it sent them, with no round trip in between.
"""

from __future__ import annotations

import asyncio
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext

from chips_common.append import Actor, AppendAnswer, AppendRequest, IssuedCredential
from chips_common.ids import new_id
from chips_common.nats.streams import HDR_REPLY, Names
from chips_common.otel import inject
from chips_gateway import metrics
from chips_gateway.errors import ChipsError


class AppendClient:
    def __init__(
        self, nc: NATS, js: JetStreamContext, names: Names, replica_id: str, timeout: float
    ):
        self.nc = nc
        self.js = js
        self.names = names
        self.reply_prefix = names.reply_subject(replica_id)
        self.timeout = timeout
        self.waiting: dict[str, asyncio.Future[AppendAnswer]] = {}
        self.sent_at: dict[str, float] = {}
        self.stored: dict[str, asyncio.Future[Any]] = {}
        self.sub: Subscription | None = None

    async def start(self) -> None:
        self.sub = await self.nc.subscribe(f"{self.reply_prefix}.*", cb=self._on_reply)

    async def stop(self) -> None:
        if self.sub is not None:
            await self.sub.unsubscribe()

    def _forget(self, request_id: str) -> None:
        self.waiting.pop(request_id, None)
        self.sent_at.pop(request_id, None)
        stored = self.stored.pop(request_id, None)
        if stored is not None and not stored.done():
            stored.cancel()  # its ack no longer matters, and it holds a pending slot

    def _on_stored(self, request_id: str, stored: asyncio.Future[Any]) -> None:
        """The stream's ack of a request: a refusal answers the request at once."""
        self.stored.pop(request_id, None)
        if stored.cancelled() or stored.exception() is None:
            return
        future = self.waiting.pop(request_id, None)
        if future is not None and not future.done():
            metrics.APPENDS.labels("unstored").inc()
            future.set_exception(
                ChipsError("unavailable", "the log is not reachable right now; send it again")
            )

    async def _on_reply(self, msg: Msg) -> None:
        answer = AppendAnswer.model_validate_json(msg.data)
        sent = self.sent_at.get(answer.request_id)
        future = self.waiting.pop(answer.request_id, None)
        if future is not None and not future.done():
            if sent is not None:
                metrics.APPEND_LATENCY.observe(asyncio.get_running_loop().time() - sent)
            outcome = "duplicate" if answer.duplicate else ("ok" if answer.ok else "refused")
            metrics.APPENDS.labels(outcome).inc()
            future.set_result(answer)

    async def send(
        self,
        workspace_id: str,
        credential_id: str,
        actor: Actor | dict[str, str],
        idempotency_key: str,
        events: list[dict[str, Any]],
        credentials: list[IssuedCredential] | None = None,
    ) -> asyncio.Future[AppendAnswer]:
        """Publish a request; the returned future resolves with the eventlog's answer.

        The write to the connection is awaited (it does not wait for the server), so
        requests a caller sends one after another enter the stream in that order; the
        stream's ack and the answer are awaited separately.
        """
        request = AppendRequest(
            request_id=new_id("req"),
            workspace_id=workspace_id,
            credential_id=credential_id,
            actor=actor if isinstance(actor, Actor) else Actor.model_validate(actor),
            idempotency_key=idempotency_key,
            events=events,
            credentials=credentials or [],
        )
        loop = asyncio.get_running_loop()
        future: asyncio.Future[AppendAnswer] = loop.create_future()
        self.waiting[request.request_id] = future
        self.sent_at[request.request_id] = loop.time()
        future.add_done_callback(lambda _: self._forget(request.request_id))
        try:
            # The current span's trace context travels with the request (DESIGN.md §8).
            stored = await self.js.publish_async(
                self.names.append_subject(workspace_id),
                request.model_dump_json().encode(),
                headers=inject({HDR_REPLY: f"{self.reply_prefix}.{request.request_id}"}),
            )
        except Exception:
            self._forget(request.request_id)
            future.cancel()
            raise ChipsError(
                "unavailable", "the log is not reachable right now; send it again"
            ) from None
        if not future.done():
            self.stored[request.request_id] = stored
            stored.add_done_callback(lambda f: self._on_stored(request.request_id, f))
        else:
            stored.cancel()
        return future

    async def wait(self, future: asyncio.Future[AppendAnswer]) -> AppendAnswer:
        try:
            return await asyncio.wait_for(future, self.timeout)
        except TimeoutError:
            metrics.APPENDS.labels("timeout").inc()
            raise ChipsError(
                "unavailable", "the log did not answer in time; send it again with the same key"
            ) from None

    async def append(self, *args: Any, **kwargs: Any) -> AppendAnswer:
        return await self.wait(await self.send(*args, **kwargs))
