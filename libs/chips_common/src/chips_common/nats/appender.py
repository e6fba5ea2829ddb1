"""Appending through the eventlog, and waiting for the log's answer: the one appender.

Every writer to the log (the gateway for its clients, the referee and attachments for
Chips) sends a request the same way: a JetStream publish on the workspace's append
subject whose headers name this process's reply subject; the eventlog answers there after
its commit (docs/architecture/design.md §2).

Many requests may be in flight at once (Pipelining): :meth:`Appender.send` writes a request
to the connection without waiting for the stream's ack (it comes back beside the answer,
and a refusal by the stream fails the request at once), so requests a caller sends one
after another enter the stream in that order, with no round trip in between. It returns
the future of the answer; :meth:`Appender.wait` waits for it, for at most ``timeout``;
:meth:`Appender.expire` fails it, for a caller that keeps its own timer.

What a writer decides for itself stays with it, through three methods a subclass may
replace: :meth:`Appender.check` (what a request's bytes may be), :meth:`Appender.failure`
(the exception a request that went unanswered fails with) and :meth:`Appender.observe`
(its metrics). By default a request is not checked, fails with :class:`Unavailable`, and
is counted nowhere.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from chips_common.append import Actor, AppendAnswer, AppendRequest, InviteSecret, IssuedCredential
from chips_common.events import JsonObject
from chips_common.ids import new_id
from chips_common.nats.stored import StoredPublisher
from chips_common.nats.streams import HDR_REPLY, Names
from chips_common.otel import inject

# Why a request got no answer: the connection did not take it, the stream did not store
# it, or the log did not answer in time.
Why = Literal["unreachable", "unstored", "timeout"]
# How a request ended, as ``observe`` is told: the log's answer, or why there was none.
Outcome = Literal["ok", "duplicate", "refused", "unstored", "timeout"]


class Unavailable(Exception):
    """The log did not take a request, or did not answer it in time (``why``)."""

    def __init__(self, why: Why) -> None:
        super().__init__(why)
        self.why: Why = why


class Appender:
    """``start`` it, ``send`` or ``wait`` through it, ``stop`` it.

    ``replier`` names this process's reply subject: unique among the processes that append
    (a gateway's replica id, or ``new_id(tag)`` for a service's).
    """

    def __init__(self, nc: NATS, names: Names, timeout: float, replier: str) -> None:
        self.nc = nc
        self.names = names
        self.timeout = timeout
        self.stored_publisher = StoredPublisher(nc)
        self.reply_prefix = names.reply_subject(replier)
        self.waiting: dict[str, asyncio.Future[AppendAnswer]] = {}
        self.sent_at: dict[str, float] = {}
        self.stored: dict[str, asyncio.Future[Any]] = {}
        self.sub: Subscription | None = None

    async def start(self) -> None:
        self.sub = await self.nc.subscribe(f"{self.reply_prefix}.*", cb=self._on_reply)

    async def stop(self) -> None:
        if self.sub is not None:
            await self.sub.unsubscribe()

    # What a writer decides for itself.

    def check(self, payload: bytes) -> None:
        """Raise if the request's bytes may not go to the log; by default all may."""

    def failure(self, why: Why) -> Exception:
        """What a request that got no answer fails with."""
        return Unavailable(why)

    def observe(self, outcome: Outcome, seconds: float | None) -> None:
        """A request ended: its outcome, and for an answer the seconds it took."""

    # The path.

    async def send(
        self,
        workspace_id: str,
        credential_id: str,
        actor: Actor | dict[str, str],
        idempotency_key: str,
        events: list[JsonObject],
        credentials: list[IssuedCredential] | None = None,
        invite: InviteSecret | None = None,
        fingerprint: str | None = None,
    ) -> asyncio.Future[AppendAnswer]:
        """Publish a request for ``events`` together under ``idempotency_key``; the returned
        future resolves with the eventlog's answer (or fails, as :meth:`failure` says).

        ``fingerprint`` tells this request from another sent under the same key
        (docs/adr/0126); None for Chips' own writers, whose keys are derived from what they
        decide. Raises pydantic's ValidationError for a request the protocol cannot carry,
        what :meth:`check` raises, or :meth:`failure` ``("unreachable")`` when the
        connection does not take it. The write to the connection is awaited (not the
        server), so requests a caller sends one after another enter the stream in order.
        """
        request = AppendRequest(
            request_id=new_id("req"),
            workspace_id=workspace_id,
            credential_id=credential_id,
            actor=actor if isinstance(actor, Actor) else Actor.model_validate(actor),
            idempotency_key=idempotency_key,
            events=events,
            credentials=credentials or [],
            invite=invite,
            fingerprint=fingerprint,
        )
        payload = request.model_dump_json().encode()
        self.check(payload)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[AppendAnswer] = loop.create_future()
        self.waiting[request.request_id] = future
        self.sent_at[request.request_id] = loop.time()
        future.add_done_callback(lambda _: self._forget(request.request_id))
        try:
            # The current span's trace context travels with the request (design.md §8).
            stored = await self.stored_publisher.publish(
                self.names.append_subject(workspace_id),
                payload,
                headers=inject({HDR_REPLY: f"{self.reply_prefix}.{request.request_id}"}),
            )
        except Exception:
            self._forget(request.request_id)
            future.cancel()
            raise self.failure("unreachable") from None
        if not future.done():
            self.stored[request.request_id] = stored
            stored.add_done_callback(lambda f: self._on_stored(request.request_id, f))
        else:
            stored.cancel()
        return future

    def expire(self, future: asyncio.Future[AppendAnswer]) -> None:
        """No answer in time: the request fails with :meth:`failure` ``("timeout")``."""
        if not future.done():
            self.observe("timeout", None)
            future.set_exception(self.failure("timeout"))

    async def wait(self, future: asyncio.Future[AppendAnswer]) -> AppendAnswer:
        """The answer, within ``timeout``; or :meth:`failure` ``("timeout")``."""
        try:
            return await asyncio.wait_for(future, self.timeout)
        except TimeoutError:
            self.observe("timeout", None)
            raise self.failure("timeout") from None

    def _forget(self, request_id: str) -> None:
        self.waiting.pop(request_id, None)
        self.sent_at.pop(request_id, None)
        stored = self.stored.pop(request_id, None)
        if stored is not None and not stored.done():
            stored.cancel()  # its ack no longer matters, and it holds a pending slot

    def _on_stored(self, request_id: str, stored: asyncio.Future[Any]) -> None:
        """The stream's ack of a request: a refusal fails the request at once."""
        self.stored.pop(request_id, None)
        if stored.cancelled() or stored.exception() is None:
            return
        future = self.waiting.pop(request_id, None)
        if future is not None and not future.done():
            self.observe("unstored", None)
            future.set_exception(self.failure("unstored"))

    async def _on_reply(self, msg: Msg) -> None:
        answer = AppendAnswer.model_validate_json(msg.data)
        sent = self.sent_at.get(answer.request_id)
        future = self.waiting.pop(answer.request_id, None)
        if future is not None and not future.done():
            seconds = None if sent is None else asyncio.get_running_loop().time() - sent
            self.observe(
                "duplicate" if answer.duplicate else ("ok" if answer.ok else "refused"), seconds
            )
            future.set_result(answer)
