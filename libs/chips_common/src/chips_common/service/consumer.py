"""The one shape of a ``CHIPS_EVENTS`` consumer (docs/architecture/code-style.md, A NATS consumer).

A durable pull consumer; each fetched batch is grouped by workspace and handed to
``handle(workspace_id, highest_seq)``, which does its work in its own transaction and
stores its checkpoint there; or (``consume_batches``, for a consumer whose work for many
workspaces fits in one transaction) the whole batch to ``handle({workspace_id:
highest_seq, …})`` at once: one transaction for the batch, whatever the number of
workspaces. The message is only a prompt: the handler reads what it has not applied from
the log in Postgres, so a lost or reordered message heals itself. A message that cannot be
decoded goes to the dead-letter subject and is terminated.

A failed handler: when several workspaces were handed over together, each is handed over
again alone at once, so one failing workspace holds back no other. A workspace that still
fails is naked with a delay that doubles with each delivery; when its failure names the
event its fold failed on (``poison.FoldFailed``) and that event has failed its cap of
deliveries or of time, it is dead-lettered with why, read past, and the workspace goes on
at once (``poison.py``, docs/adr/0148).

A batch costs one span, not one per event: ``<service>.receive`` covers its handling and
links to each event's append span (the trace it was logged under), 128 links a span as
OpenTelemetry allows, so ``chips trace`` still draws every consumer under every message
(docs/adr/0138).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from opentelemetry.trace import Link, Span, SpanKind

from chips_common import otel
from chips_common.db.away import database_away
from chips_common.nats.pull import Flow
from chips_common.nats.streams import Names, declare_streams
from chips_common.service import poison
from chips_common.service.metrics import LagProbe
from chips_common.service.poison import FoldFailed, Limits

log = logging.getLogger(__name__)
tracer = otel.tracer("chips.consumer")

Handler = Callable[[str, int], Awaitable[None]]
BatchHandler = Callable[[Mapping[str, int]], Awaitable[None]]
Settle = Callable[[list[Msg]], Awaitable[None]]
# What a consumer acts on: event types, or a test of the decoded event (its type and a few
# cheap fields; true when the handler may do anything with it), asked of every event
# delivered, in the order delivered.
Wanted = Collection[str] | Callable[[Mapping[str, Any]], bool]

DEFAULT_LIMITS = Limits()

# OpenTelemetry's default cap on a span's links: a larger batch gets a span per this many.
LINKS_PER_SPAN = 128


async def consume_events(
    nc: NATS,
    js: JetStreamContext,
    names: Names,
    service: str,
    handle: Handler,
    stop: asyncio.Event,
    *,
    batch_size: int = 256,
    wanted: Wanted | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> None:
    """Consume until ``stop``; if the stream or consumer goes away, declare them again.

    ``wanted``: the event types the handler acts on, for a service that acts on few, or a
    test of each decoded event; a workspace whose batch holds none it wants is acked
    without calling it (the handler reads the log from its checkpoint, so it still sees
    every one when it runs).
    ``limits``: how a failing workspace is tried again and when its poison event is set
    aside (``poison.py``).
    """
    poison.arm_test_hook(limits.fails_in)

    async def settle(msgs: list[Msg]) -> None:
        await settle_batch(nc, names, msgs, handle, service, wanted, js=js, limits=limits)

    await _consume_until(js, names, service, settle, stop, batch_size)


async def consume_batches(
    nc: NATS,
    js: JetStreamContext,
    names: Names,
    service: str,
    handle: BatchHandler,
    stop: asyncio.Event,
    *,
    batch_size: int = 256,
    wanted: Wanted | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> None:
    """As ``consume_events``, with ``handle`` called once per fetched batch, for every
    workspace in it together: one transaction for the batch, not one per workspace."""
    poison.arm_test_hook(limits.fails_in)

    async def settle(msgs: list[Msg]) -> None:
        await settle_together(nc, names, msgs, handle, service, wanted, js=js, limits=limits)

    await _consume_until(js, names, service, settle, stop, batch_size)


async def _consume_until(
    js: JetStreamContext,
    names: Names,
    service: str,
    settle: Settle,
    stop: asyncio.Event,
    batch_size: int,
) -> None:
    while not stop.is_set():
        try:
            await _consume(js, names, service, settle, stop, batch_size)
        except Exception:
            log.exception("%s lost its consumer; declaring it again", service)
            await asyncio.sleep(1)
            try:
                await declare_streams(js, names)
            except Exception:
                log.exception("could not declare the streams")


async def _consume(
    js: JetStreamContext,
    names: Names,
    service: str,
    settle: Settle,
    stop: asyncio.Event,
    batch_size: int,
) -> None:
    sub = await js.pull_subscribe(
        names.events_wildcard,
        durable=names.consumer(service),
        stream=names.events_stream,
        config=ConsumerConfig(
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL,
            ack_wait=30,
            max_deliver=20,
            max_ack_pending=20_000,
        ),
    )
    log.info("%s consuming %s", service, names.events_stream)
    lag = LagProbe(names.events_stream, names.consumer(service))
    # The consumer's pull requests stay open: the next events arrive while a batch is
    # handled, and a batch handled costs no request of its own (docs/adr/0116).
    flow = Flow(sub, batch_size)
    try:
        while not stop.is_set():
            await lag.maybe_update(js)
            try:
                msgs = await flow.next(timeout=1)
            except (TimeoutError, NatsTimeout):
                continue
            await settle(msgs)
    finally:
        with contextlib.suppress(Exception):  # the connection may be gone already
            await flow.give_back()
        await sub.unsubscribe()


@dataclass
class Sorted:
    """A fetched batch by workspace: the highest seq of each, its messages, and the
    workspaces whose messages hold an event the handler acts on."""

    highest: dict[str, int] = field(default_factory=dict)
    by_workspace: dict[str, list[Msg]] = field(default_factory=dict)
    acted_on: set[str] = field(default_factory=set)
    links: list[Link] = field(default_factory=list)

    def spans(self, service: str) -> list[Span]:
        """The batch's receive spans, started: one per ``LINKS_PER_SPAN`` events, each
        linked to those events' append spans. The caller ends them once settled."""
        return [
            tracer.start_span(
                f"{service}.receive",
                kind=SpanKind.CONSUMER,
                links=self.links[i : i + LINKS_PER_SPAN],
                attributes={"chips.batch_size": len(self.links[i : i + LINKS_PER_SPAN])},
            )
            for i in range(0, len(self.links), LINKS_PER_SPAN)
        ]


async def sort_batch(
    nc: NATS, names: Names, msgs: list[Msg], service: str, wanted: Wanted | None
) -> Sorted:
    """Group a batch by workspace; dead-letter (and terminate) what cannot be decoded."""
    batch = Sorted()
    for msg in msgs:
        try:
            event = orjson.loads(msg.data)
            workspace_id, seq = str(event["workspace_id"]), int(event["seq"])
        except (ValueError, KeyError, TypeError):  # orjson.JSONDecodeError is a ValueError
            log.error("dead-lettering an undecodable event from %s", msg.subject)
            await nc.publish(
                names.dead_letter_subject,
                msg.data,
                headers={"Chips-Dead-Reason": "undecodable event"},
            )
            await msg.term()
            continue
        # A link per event received, to the append that logged it (the batch's span).
        sender = otel.span_context_of(msg.headers)
        if sender is not None:
            batch.links.append(
                Link(
                    sender,
                    {
                        otel.WORKSPACE_ID: workspace_id,
                        otel.SEQ: seq,
                        otel.EVENT_TYPE: str(event.get("type")),
                    },
                )
            )
        batch.highest[workspace_id] = max(seq, batch.highest.get(workspace_id, 0))
        batch.by_workspace.setdefault(workspace_id, []).append(msg)
        if acts_on(wanted, event):  # asked of every event: a test may note what it sees
            batch.acted_on.add(workspace_id)
    return batch


def acts_on(wanted: Wanted | None, event: Mapping[str, Any]) -> bool:
    """Whether a consumer wanting ``wanted`` acts on ``event`` (None: on every event)."""
    if wanted is None:
        return True
    if callable(wanted):
        return wanted(event)
    return event.get("type") in wanted


async def settle_batch(
    nc: NATS,
    names: Names,
    msgs: list[Msg],
    handle: Handler,
    service: str = "consumer",
    wanted: Wanted | None = None,
    *,
    js: JetStreamContext | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> None:
    """Each workspace of the batch handed to ``handle`` on its own; its messages acked
    after it returns, or naked with a growing delay if it failed (a poison event set aside
    once its cap is reached, ``poison.py``)."""
    batch = await sort_batch(nc, names, msgs, service, wanted)
    spans = batch.spans(service)
    aside = SetAside(nc, js, names, service, limits)
    try:
        for workspace_id, seq in batch.highest.items():
            workspace_msgs = batch.by_workspace[workspace_id]
            if workspace_id not in batch.acted_on:
                for msg in workspace_msgs:
                    await msg.ack()
                continue

            async def alone(workspace_id: str = workspace_id, seq: int = seq) -> None:
                await handle(workspace_id, seq)

            await aside.settle(workspace_id, workspace_msgs, alone)
    finally:
        for span in spans:
            span.end()


async def settle_together(
    nc: NATS,
    names: Names,
    msgs: list[Msg],
    handle: BatchHandler,
    service: str = "consumer",
    wanted: Wanted | None = None,
    *,
    js: JetStreamContext | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> None:
    """The batch's workspaces handed to ``handle`` at once; every message acked after it
    returns (its transaction committed). If it failed, each workspace is handed over alone
    at once, so the others commit and are acked while the one at fault is tried again
    later (or its poison event set aside, ``poison.py``)."""
    batch = await sort_batch(nc, names, msgs, service, wanted)
    spans = batch.spans(service)
    aside = SetAside(nc, js, names, service, limits)
    try:
        acted = {w: seq for w, seq in batch.highest.items() if w in batch.acted_on}
        failed: Exception | None = None
        if acted:
            try:
                await handle(acted)
            except Exception as exc:
                failed = exc
        for workspace_id, workspace_msgs in batch.by_workspace.items():
            if failed is None or workspace_id not in acted:
                for msg in workspace_msgs:
                    await msg.ack()
                continue

            async def alone(workspace_id: str = workspace_id) -> None:
                await handle({workspace_id: acted[workspace_id]})

            # One workspace alone failed already, and Postgres away fails every one alike:
            # that failure is decided on, not tried again at once.
            first = failed if len(acted) == 1 or database_away(failed) else None
            await aside.settle(workspace_id, workspace_msgs, alone, first)
    finally:
        for span in spans:
            span.end()


# How many poison events of one workspace are set aside in one go before its messages are
# naked (a later delivery goes on from there).
ASIDE_IN_A_ROW = 20


@dataclass
class SetAside:
    """A failing workspace's messages settled: naked with a growing delay, or its poison
    event dead-lettered and read past (``poison.decide``)."""

    nc: NATS
    js: JetStreamContext | None
    names: Names
    service: str
    limits: Limits

    async def settle(
        self,
        workspace_id: str,
        msgs: list[Msg],
        run: Callable[[], Awaitable[None]],
        first: Exception | None = None,
    ) -> None:
        failure = first
        for _ in range(ASIDE_IN_A_ROW):
            if failure is None:
                try:
                    await run()
                except Exception as exc:
                    failure = exc
                else:
                    poison.went_on(workspace_id)
                    for msg in msgs:
                        await msg.ack()
                    return
            named = isinstance(failure, FoldFailed) and failure.workspace_id == workspace_id
            delivered = max(poison.deliveries(m) for m in msgs)
            age = max(poison.age_seconds(m) for m in msgs)
            now = time.monotonic()
            tried, waited = poison.tries(delivered, age, poison.last_aside(workspace_id), now)
            verdict = poison.decide(self.limits, tried, waited, named)
            if isinstance(verdict, poison.Retry):
                log.error(
                    "%s: %s failed (delivery %d); again in %.2fs",
                    self.service,
                    workspace_id,
                    delivered,
                    verdict.delay,
                    exc_info=failure,
                )
                for msg in msgs:
                    await msg.nak(delay=verdict.delay)
                return
            assert isinstance(failure, FoldFailed)
            await self.dead_letter(failure, verdict.reason, tried)
            poison.put_aside(failure.workspace_id, failure.seq, delivered, now)
            failure = None  # the workspace goes on at once, past the event set aside
        for msg in msgs:
            await msg.nak(delay=self.limits.first_delay_seconds)

    async def dead_letter(self, failed: FoldFailed, reason: str, delivered: int) -> None:
        """The event on the dead-letter stream with why, as the append path sets a request
        aside (docs/adr/0025): an operator reads it there."""
        cause = failed.__cause__
        why = f"{self.service}: {reason}: {cause!r}"[:500]
        log.error(
            "%s: setting aside %s at %s/%d: %s",
            self.service,
            failed.event_type,
            failed.workspace_id,
            failed.seq,
            why,
        )
        headers = {
            "Chips-Dead-Reason": why,
            "Chips-Deliveries": str(delivered),
            "Chips-Subject": self.names.events_subject(failed.workspace_id),
            "Chips-Consumer": self.service,
            "Chips-Workspace": failed.workspace_id,
            "Chips-Seq": str(failed.seq),
        }
        data = orjson.dumps(failed.event, default=str)
        if self.js is not None:
            try:
                await self.js.publish(self.names.dead_letter_subject, data, headers=headers)
                return
            except Exception:
                log.exception("the dead-letter stream did not take it; publishing it plainly")
        await self.nc.publish(self.names.dead_letter_subject, data, headers=headers)
