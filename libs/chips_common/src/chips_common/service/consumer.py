"""The one shape of a ``CHIPS_EVENTS`` consumer (STYLE.md, A NATS consumer).

A durable pull consumer; each fetched batch is grouped by workspace and handed to
``handle(workspace_id, highest_seq)``, which does its work in its own transaction and
stores its checkpoint there; or (``consume_batches``, for a consumer whose work for many
workspaces fits in one transaction) the whole batch to ``handle({workspace_id:
highest_seq, …})`` at once: one transaction for the batch, whatever the number of
workspaces. The message is only a prompt: the handler reads what it has not applied from
the log in Postgres, so a lost or reordered message heals itself. A message that cannot be
decoded goes to the dead-letter subject and is terminated; a failed handler naks with a
delay.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field

import orjson
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from opentelemetry.trace import SpanKind

from chips_common import otel
from chips_common.nats.pull import Flow
from chips_common.nats.streams import Names, declare_streams
from chips_common.service.metrics import LagProbe

log = logging.getLogger(__name__)
tracer = otel.tracer("chips.consumer")

Handler = Callable[[str, int], Awaitable[None]]
BatchHandler = Callable[[Mapping[str, int]], Awaitable[None]]
Settle = Callable[[list[Msg]], Awaitable[None]]


async def consume_events(
    nc: NATS,
    js: JetStreamContext,
    names: Names,
    service: str,
    handle: Handler,
    stop: asyncio.Event,
    *,
    batch_size: int = 256,
    wanted: Collection[str] | None = None,
) -> None:
    """Consume until ``stop``; if the stream or consumer goes away, declare them again.

    ``wanted``: the event types the handler acts on, for a service that acts on few; a
    workspace whose batch holds none of them is acked without calling it (the handler
    reads the log from its checkpoint, so it still sees every one when it runs).
    """

    async def settle(msgs: list[Msg]) -> None:
        await settle_batch(nc, names, msgs, handle, service, wanted)

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
    wanted: Collection[str] | None = None,
) -> None:
    """As ``consume_events``, with ``handle`` called once per fetched batch, for every
    workspace in it together: one transaction for the batch, not one per workspace."""

    async def settle(msgs: list[Msg]) -> None:
        await settle_together(nc, names, msgs, handle, service, wanted)

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


async def sort_batch(
    nc: NATS, names: Names, msgs: list[Msg], service: str, wanted: Collection[str] | None
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
        # A span per event received, in the trace of the append that logged it.
        tracer.start_span(
            f"{service}.receive",
            context=otel.extract(msg.headers),
            kind=SpanKind.CONSUMER,
            attributes={
                otel.WORKSPACE_ID: workspace_id,
                otel.SEQ: seq,
                otel.EVENT_TYPE: str(event.get("type")),
            },
        ).end()
        batch.highest[workspace_id] = max(seq, batch.highest.get(workspace_id, 0))
        batch.by_workspace.setdefault(workspace_id, []).append(msg)
        if wanted is None or event.get("type") in wanted:
            batch.acted_on.add(workspace_id)
    return batch


async def settle_batch(
    nc: NATS,
    names: Names,
    msgs: list[Msg],
    handle: Handler,
    service: str = "consumer",
    wanted: Collection[str] | None = None,
) -> None:
    batch = await sort_batch(nc, names, msgs, service, wanted)
    for workspace_id, seq in batch.highest.items():
        if workspace_id not in batch.acted_on:
            for msg in batch.by_workspace[workspace_id]:
                await msg.ack()
            continue
        try:
            await handle(workspace_id, seq)
        except Exception:
            log.exception("applying %s up to seq %d failed; will retry", workspace_id, seq)
            for msg in batch.by_workspace[workspace_id]:
                await msg.nak(delay=2)
            continue
        for msg in batch.by_workspace[workspace_id]:
            await msg.ack()


async def settle_together(
    nc: NATS,
    names: Names,
    msgs: list[Msg],
    handle: BatchHandler,
    service: str = "consumer",
    wanted: Collection[str] | None = None,
) -> None:
    """The batch's workspaces handed to ``handle`` at once; every message acked after it
    returns (its transaction committed), or every one naked if it failed."""
    batch = await sort_batch(nc, names, msgs, service, wanted)
    acted = {w: seq for w, seq in batch.highest.items() if w in batch.acted_on}
    ok = True
    if acted:
        try:
            await handle(acted)
        except Exception:
            log.exception("applying %d workspaces failed; will retry", len(acted))
            ok = False
    for workspace_id, workspace_msgs in batch.by_workspace.items():
        for msg in workspace_msgs:
            if ok or workspace_id not in acted:
                await msg.ack()
            else:
                await msg.nak(delay=2)
