"""Writes: an event frame read from the socket, queued, sent to the eventlog a few at a
time, and answered with its ack or error (docs/adr/0065, docs/adr/0024).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from chips_common import otel
from chips_common.events import JsonObject
from chips_gateway import metrics, runs
from chips_gateway.acks import ack_frame, ack_of
from chips_gateway.errors import ChipsError
from chips_gateway.intake import PARSED_WAITING
from chips_gateway.ratelimit import retry_after
from chips_gateway.ws.checks import actor_for, check_writable
from chips_gateway.ws.session import SessionBase, Write

tracer = otel.tracer("chips.gateway")


class Writes(SessionBase):
    """A socket's writes, from its event frames to their answers."""

    __slots__ = ()

    async def on_event(self, frame: JsonObject) -> None:
        if "idempotency_key" in frame:
            self.push(
                self.error(
                    "invalid_frame",
                    "idempotency_key goes inside event, not beside it",
                    idempotency_key=frame.get("idempotency_key"),
                )
            )
            return
        event = frame.get("event")
        if not isinstance(event, dict):
            self.push(self.error("invalid_frame", "an event frame carries one event object"))
            return
        event = dict(event)
        key = event.pop("idempotency_key", None)
        if not isinstance(key, str) or not key or len(key) > 200 or "\x00" in key:
            self.push(
                self.error("invalid_frame", "every event carries its idempotency_key inside it")
            )
            return
        if not await self.within_rate(key):
            return
        try:
            actor = actor_for(self.principal, event)
            check_writable(event, self.ctx.settings.max_event_bytes)
        except ChipsError as exc:
            self.push(self.error(exc.code, exc.message, idempotency_key=key, **exc.extra))
            return
        if event["type"] in runs.DECISIONS:
            self.sent_keys.add(key)
        p = self.principal
        # One span per client frame; a client may hand us its own trace (docs/architecture/design.md
        # §8).
        traceparent = frame.get("traceparent")
        parent = otel.from_traceparent(traceparent) if isinstance(traceparent, str) else None
        span = tracer.start_span(
            "gateway.receive event",
            context=parent,
            kind=SpanKind.SERVER,
            attributes={otel.WORKSPACE_ID: p.workspace_id, otel.EVENT_TYPE: str(event["type"])},
        )
        if len(self.queued_writes) >= self.max_queued_writes:
            # Stop reading this socket until its queue has room: its TCP window fills.
            self.write_room.clear()
            await self.write_room.wait()
        self.queued_writes.append(Write(key, event, span, actor))
        self.writes_idle.clear()
        self.may_send.set()
        if self.pumping is None:
            # Started by the first write: a socket that only reads holds no pump.
            self.pumping = asyncio.create_task(self.pump())
            self.pumping.add_done_callback(self.pump_ended)

    def pump_ended(self, task: asyncio.Task[None]) -> None:
        """The pump runs until the socket ends; if it ended first, so does the socket."""
        if not task.cancelled():
            self.ending.set()

    async def pump(self) -> None:
        """Send the socket's queued writes to the eventlog, in order, a few at a time."""
        while True:
            await self.may_send.wait()
            if not self.queued_writes or self.inflight >= self.max_inflight:
                self.may_send.clear()
                continue
            if (wait := self.to_log.take(time.monotonic())) > 0.0:
                await asyncio.sleep(wait)
                continue
            write = self.queued_writes.popleft()
            if len(self.queued_writes) < self.max_queued_writes:
                self.write_room.set()
            self.inflight += 1
            await self.send_write(write)

    async def send_write(self, write: Write) -> None:
        p = self.principal
        key, span = write.key, write.span
        try:
            with trace.use_span(span, end_on_exit=False):
                future = await self.ctx.appender.send(
                    p.workspace_id, p.credential_id, write.actor, key, [write.event]
                )
        except ChipsError as exc:
            self.sent_one()
            span.end()
            self.push(self.error(exc.code, exc.message, idempotency_key=key))
            return
        # No task per write: the answer (or the timeout) calls back (docs/adr/0024).
        timer = asyncio.get_running_loop().call_later(
            self.ctx.appender.timeout, self.ctx.appender.expire, future
        )
        self.waiting.add(future)
        future.add_done_callback(lambda done: self.answered(key, done, span, timer))

    def sent_one(self) -> None:
        """A write in flight was answered (or never went): the next may go."""
        self.inflight -= 1
        self.may_send.set()
        if not self.queued_writes and not self.inflight:
            self.writes_idle.set()

    async def within_rate(self, key: str) -> bool:
        """Whether a write may go on; if not, the socket is told when to send it again.

        A socket that keeps writing through its refusals is closed (``kept_going``).
        """
        now = time.monotonic()
        wait = self.writes.take(now)
        if wait == 0.0:
            wait = await self.ctx.limiter.take(self.principal.credential_id, self.writes_ahead())
        if wait == 0.0:
            return True
        metrics.RATE_LIMITED.labels("socket").inc()
        self.push(
            self.error(
                "rate_limited",
                f"too many writes; send this one again in {retry_after(wait):.3f} s",
                idempotency_key=key,
                retry_after=retry_after(wait),
            )
        )
        if self.strikes.take(now) > 0.0:
            self.kept_going.set()
            self.refuse_queued()
        return False

    def writes_ahead(self) -> int:
        """How many more writes this socket will ask its credential for straight after this
        one: the messages already read from it and parsed, as far as its own bucket lets
        them through (docs/adr/0158). A flood's burst, read at once, then costs one take
        from Redis instead of one every two writes, and its refusals come before its
        writes have gone to the log."""
        waiting = self.ws.scope.get("extensions", {}).get(PARSED_WAITING)
        if waiting is None:
            return 0
        parsed: int = waiting["count"]()
        return min(parsed, int(self.writes.tokens))

    def refuse_queued(self) -> None:
        """A socket that went on writing through its refusals: the writes it was let make
        that still wait in its queue at the gateway never go to the log; each is refused
        ``rate_limited``, to be sent again once its credential may write (docs/adr/0155).
        """
        wait = retry_after(self.ctx.settings.rate_limit_penalty_seconds)
        while self.queued_writes:
            write = self.queued_writes.popleft()
            write.span.set_attribute("chips.refused", "rate_limited")
            write.span.end()
            metrics.RATE_LIMITED.labels("socket").inc()
            self.push(
                self.error(
                    "rate_limited",
                    "this socket went on writing after it was told to wait, and this write "
                    f"was not logged; send it again in {wait:.0f} s",
                    idempotency_key=write.key,
                    retry_after=wait,
                )
            )
        self.write_room.set()
        if not self.inflight:
            self.writes_idle.set()

    def answered(
        self, key: str, future: asyncio.Future[Any], span: Span, timer: asyncio.TimerHandle
    ) -> None:
        """The eventlog's answer to one write (or its timeout): the ack or error frame."""
        timer.cancel()
        self.waiting.discard(future)
        self.sent_one()
        if future.cancelled():  # the socket closed first
            span.end()
            return
        exc = future.exception()
        if exc is not None:
            span.end()
            error = (
                exc
                if isinstance(exc, ChipsError)
                else ChipsError("unavailable", "the log did not answer; send it again")
            )
            self.push(
                self.error(
                    error.code,
                    error.message,
                    idempotency_key=key,
                    retry_after=error.extra.get("retry_after"),
                )
            )
            return
        answer = future.result()
        trace_id = otel.trace_id_of(span)
        if answer.ok:
            if answer.seqs:  # a request may log nothing (a harness door that changed nothing)
                span.set_attribute(otel.SEQ, answer.seqs[-1])
            if message_id := answer.events[-1].get("message_id") if answer.events else None:
                span.set_attribute(otel.MESSAGE_ID, message_id)
            span.end()
            self.push(ack_frame(ack_of(key, answer, trace_id)))
            if (receipt := runs.receipt_after_ack(answer, key)) is not None:
                self.push(receipt)
        else:
            span.set_attribute("chips.refused", answer.code or "invalid_event")
            span.end()
            # As a ChipsError, so that an ``unavailable`` says when to send it again.
            refusal = ChipsError(
                answer.code or "invalid_event",
                answer.message or "refused",
                field=answer.field,
                **(answer.data or {}),
            )
            self.push(
                self.error(refusal.code, refusal.message, idempotency_key=key, **refusal.extra)
            )

    async def answered_all(self) -> None:
        """Until every write taken from the socket is answered and the answer sent."""
        await self.writes_idle.wait()
        await self.queue.join()
