"""Sending append requests to the eventlog and waiting for its answers.

Each request is a JetStream publish on ``chips.append.<workspace>`` whose headers name
this replica's reply subject; the eventlog answers there after its commit. Many requests
may be in flight at once (docs/architecture/design.md §2, Pipelining): a request is written to the
stream without waiting for the stream's ack (it comes back beside the answer, and a refusal by
the stream answers the request with ``unavailable``), so a socket's requests follow one
another into the stream in the order it sent them, with no round trip in between.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from pydantic import ValidationError

from chips_common.append import (
    Actor,
    AppendAnswer,
    AppendRequest,
    InviteSecret,
    IssuedCredential,
    fingerprint_of,
)
from chips_common.ids import new_id
from chips_common.nats.stored import StoredPublisher
from chips_common.nats.streams import HDR_REPLY, Names
from chips_common.otel import inject
from chips_gateway import metrics
from chips_gateway.edge import has_nul
from chips_gateway.errors import ChipsError

# Well under NATS's default max payload (1 MB), headers and all.
MAX_REQUEST_BYTES = 900 * 1024


class AppendClient:
    def __init__(
        self, nc: NATS, js: JetStreamContext, names: Names, replica_id: str, timeout: float
    ):
        self.nc = nc
        self.js = js
        self.stored_publisher = StoredPublisher(nc)
        self.names = names
        self.reply_prefix = names.reply_subject(replica_id)
        self.timeout = timeout
        self.waiting: dict[str, asyncio.Future[AppendAnswer]] = {}
        self.sent_at: dict[str, float] = {}
        self.stored: dict[str, asyncio.Future[Any]] = {}
        self.sub: Subscription | None = None
        # Workspaces whose head a subscribe without since is reading, with how many such
        # reads are under way and what opens once none is (hold).
        self.held: dict[str, tuple[int, asyncio.Event]] = {}

    def hold(self, workspace_id: str) -> Callable[[], None]:
        """Hold the workspace's writes sent from now until the returned release is called.

        A subscribe without since starts at the log's head as it is read: a write this
        gateway is sent after that subscribe waits for the read, so its seq is beyond it
        and the subscriber is sent it, whatever the machine's load.
        """
        count, opened = self.held.get(workspace_id, (0, asyncio.Event()))
        self.held[workspace_id] = (count + 1, opened)
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            left, _ = self.held[workspace_id]
            if left > 1:
                self.held[workspace_id] = (left - 1, opened)
            else:
                del self.held[workspace_id]
                opened.set()

        return release

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
        invite: InviteSecret | None = None,
        fingerprint: str | None = None,
    ) -> asyncio.Future[AppendAnswer]:
        """Publish a request; the returned future resolves with the eventlog's answer.

        ``fingerprint`` tells this request from another sent under the same key
        (docs/adr/0126); by default it is taken from who sends it and its events, which
        is what the client sent when the events are its own. A route that adds fresh ids
        to the events passes the fingerprint of the client's request instead.

        The write to the connection is awaited (it does not wait for the server), so
        requests a caller sends one after another enter the stream in that order; the
        stream's ack and the answer are awaited separately.
        """
        if (held := self.held.get(workspace_id)) is not None:
            await held[1].wait()
        try:
            who = actor if isinstance(actor, Actor) else Actor.model_validate(actor)
            if fingerprint is None:
                fingerprint = fingerprint_of({"actor": who.model_dump(), "events": events})
            request = AppendRequest(
                request_id=new_id("req"),
                workspace_id=workspace_id,
                credential_id=credential_id,
                actor=who,
                idempotency_key=idempotency_key,
                events=events,
                credentials=credentials or [],
                invite=invite,
                fingerprint=fingerprint,
            )
        except ValidationError as exc:
            field = ".".join(str(p) for p in exc.errors()[0]["loc"])
            raise ChipsError("invalid_request", f"{field}: {exc.errors()[0]['msg']}") from None
        payload = request.model_dump_json().encode()
        # Nothing the path cannot carry reaches the eventlog, whatever route built it: a NUL
        # character (Postgres refuses it) or more than a NATS message holds (docs/adr/0040).
        if has_nul(payload):
            raise ChipsError("invalid_request", "text may not hold the NUL character (\\u0000)")
        if len(payload) > MAX_REQUEST_BYTES:
            raise ChipsError("too_large", f"a request is at most {MAX_REQUEST_BYTES} bytes")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[AppendAnswer] = loop.create_future()
        self.waiting[request.request_id] = future
        self.sent_at[request.request_id] = loop.time()
        future.add_done_callback(lambda _: self._forget(request.request_id))
        try:
            # The current span's trace context travels with the request (docs/architecture/design.md
            # §8).
            stored = await self.stored_publisher.publish(
                self.names.append_subject(workspace_id),
                payload,
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

    def expire(self, future: asyncio.Future[AppendAnswer]) -> None:
        """No answer in time: the request is answered ``unavailable`` (send it again)."""
        if not future.done():
            metrics.APPENDS.labels("timeout").inc()
            future.set_exception(
                ChipsError(
                    "unavailable",
                    "the log did not answer in time; send it again with the same key",
                )
            )

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
