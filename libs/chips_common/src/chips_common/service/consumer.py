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
at once (``poison.py``, docs/adr/0148; the settling itself is ``aside.py``).

An event whose fold may wait (``may_wait``: nothing the fold does with it is read before
the workspace's next fold) is not folded on its own: its message is held, unacked, and
goes with the workspace's next fold, prompted by an event that may not wait or by the
wait running out (``held.py``, docs/adr/0162).

A batch costs one span, not one per event: ``<service>.receive`` covers its handling and
links to each event's append span (the trace it was logged under), 128 links a span as
OpenTelemetry allows, so ``chips trace`` still draws every consumer under every message
(docs/adr/0138).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
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
from chips_common.nats import nudge
from chips_common.nats.connect import ack_all
from chips_common.nats.pull import Flow
from chips_common.nats.streams import Names, declare_streams
from chips_common.service import poison
from chips_common.service.aside import SetAside
from chips_common.service.held import Held, LateAcks, Waiting, heard
from chips_common.service.metrics import LagProbe
from chips_common.service.poison import Limits

log = logging.getLogger(__name__)
tracer = otel.tracer("chips.consumer")

Handler = Callable[[str, int], Awaitable[None]]
BatchHandler = Callable[[Mapping[str, int]], Awaitable[None]]
Settle = Callable[[list[Msg]], Awaitable[None]]
# What a consumer acts on: event types, or a test of the decoded event (its type and a few
# cheap fields; true when the handler may do anything with it), asked of every event
# delivered, in the order delivered.
Wanted = Collection[str] | Callable[[Mapping[str, Any]], bool]
# Of an event the consumer acts on, whether its fold may wait (``held.py``): true when
# nothing its fold does is read before the workspace's next fold.
MayWait = Callable[[Mapping[str, Any]], bool]
SettleDue = Callable[[dict[str, Waiting]], Awaitable[None]]

DEFAULT_LIMITS = Limits()


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
    may_wait: MayWait | None = None,
    wait: float = 1.0,
    pace: float = 0.0,
) -> None:
    """Consume until ``stop``; if the stream or consumer goes away, declare them again.

    ``wanted``: the event types the handler acts on, for a service that acts on few, or a
    test of each decoded event; a workspace whose batch holds none it wants is acked
    without calling it (the handler reads the log from its checkpoint, so it still sees
    every one when it runs).
    ``limits``: how a failing workspace is tried again and when its poison event is set
    aside (``poison.py``).
    ``may_wait``: of each event wanted, whether its fold may wait; a workspace whose batch
    holds only such events is held, unacked, and handed over with its next event that may
    not, or ``wait`` seconds later (``held.py``).
    ``pace``: ask for events at most every ``pace`` seconds while they come, for a
    consumer whose reads ask for what they wait for (``pull.Pace``, docs/adr/0168).
    """
    poison.arm_test_hook(limits.fails_in)
    held = Held(wait) if may_wait is not None else None
    late = LateAcks()

    async def settle(msgs: list[Msg]) -> None:
        await settle_batch(
            nc,
            names,
            msgs,
            handle,
            service,
            wanted,
            js=js,
            limits=limits,
            may_wait=may_wait,
            held=held,
            late=late,
        )

    async def settle_due(due: dict[str, Waiting]) -> None:
        aside = SetAside(nc, js, names, service, limits)
        for workspace_id, waiting in due.items():

            async def alone(workspace_id: str = workspace_id, seq: int = waiting.seq) -> None:
                await handle(workspace_id, seq)

            await aside.settle(workspace_id, waiting.msgs, alone)

    await _consume_until(
        js, names, service, settle, stop, batch_size, held, settle_due, nc, late, pace
    )


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
    may_wait: MayWait | None = None,
    wait: float = 1.0,
    pace: float = 0.0,
) -> None:
    """As ``consume_events``, with ``handle`` called once per fetched batch, for every
    workspace in it together: one transaction for the batch, not one per workspace. The
    workspaces held (``may_wait``) whose wait ran out are handed over together too."""
    poison.arm_test_hook(limits.fails_in)
    held = Held(wait) if may_wait is not None else None
    late = LateAcks()

    async def settle(msgs: list[Msg]) -> None:
        await settle_together(
            nc,
            names,
            msgs,
            handle,
            service,
            wanted,
            js=js,
            limits=limits,
            may_wait=may_wait,
            held=held,
            late=late,
        )

    async def settle_due(due: dict[str, Waiting]) -> None:
        await fold_together(
            SetAside(nc, js, names, service, limits),
            handle,
            {w: waiting.seq for w, waiting in due.items()},
            {w: waiting.msgs for w, waiting in due.items()},
        )

    await _consume_until(
        js, names, service, settle, stop, batch_size, held, settle_due, nc, late, pace
    )


async def _consume_until(
    js: JetStreamContext,
    names: Names,
    service: str,
    settle: Settle,
    stop: asyncio.Event,
    batch_size: int,
    held: Held | None = None,
    settle_due: SettleDue | None = None,
    nc: NATS | None = None,
    late: LateAcks | None = None,
    pace: float = 0.0,
) -> None:
    while not stop.is_set():
        try:
            await _consume(
                js, names, service, settle, stop, batch_size, held, settle_due, nc, late, pace
            )
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
    held: Held | None = None,
    settle_due: SettleDue | None = None,
    nc: NATS | None = None,
    late: LateAcks | None = None,
    pace: float = 0.0,
) -> None:
    """Consume until ``stop``. With ``held`` or ``pace``, and ``nc``, nudges are heard on
    the service's fold subject: a nudge for a held workspace, or any on a paced flow, has
    the flow ask at once; ``late``'s messages are acked once due, and all on the way out
    (docs/adr/0168)."""
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
    flow = Flow(sub, batch_size, pace=pace)
    nudges = None
    if (held is not None or flow.pace is not None) and nc is not None:
        # A reader waiting for a workspace asks for it (docs/adr/0168).
        nudged = heard(held, flow.wake, paced=flow.pace is not None)
        nudges = await nc.subscribe(nudge.fold_subject(names, service), cb=nudged)
    try:
        while not stop.is_set():
            await lag.maybe_update(js)
            longest = 1.0 if late is None else late.next_in(1.0)
            try:
                msgs = await flow.next(timeout=longest if held is None else held.next_in(longest))
            except (TimeoutError, NatsTimeout):
                msgs = []
            if msgs:
                await settle(msgs)
            due = held.due() if held is not None and held.by_workspace else {}
            if due and settle_due is not None:
                await settle_due(due)
            if late is not None and late.msgs:
                await ack_all(late.due())
    finally:
        with contextlib.suppress(Exception):  # read past: acked, not handed out again
            await ack_all(late.take_all() if late is not None else [])
        with contextlib.suppress(Exception):  # the connection may be gone already
            await flow.give_back()
        # What is held is handed out again at once, to this process started again or to
        # another replica.
        with contextlib.suppress(Exception):
            for waiting in (held.take_all() if held is not None else {}).values():
                for msg in waiting.msgs:
                    await msg.nak()
        if nudges is not None:
            with contextlib.suppress(Exception):
                await nudges.unsubscribe()
        await sub.unsubscribe()


@dataclass
class Sorted:
    """A fetched batch by workspace: the highest seq of each, its messages, and the
    workspaces whose messages hold an event the handler acts on (now, or when it may)."""

    highest: dict[str, int] = field(default_factory=dict)
    by_workspace: dict[str, list[Msg]] = field(default_factory=dict)
    acted_on: set[str] = field(default_factory=set)
    # Workspaces with an event acted on whose fold may wait (``held.py``).
    may_wait: set[str] = field(default_factory=set)
    links: list[Link] = field(default_factory=list)

    def spans(self, service: str) -> list[Span]:
        """The batch's receive spans, started: one per ``LINKS_PER_SPAN`` events, each
        linked to those events' append spans. The caller ends them once settled."""
        return otel.linked_spans(tracer, f"{service}.receive", self.links, kind=SpanKind.CONSUMER)


async def sort_batch(
    nc: NATS,
    names: Names,
    msgs: list[Msg],
    service: str,
    wanted: Wanted | None,
    may_wait: MayWait | None = None,
) -> Sorted:
    """Group a batch by workspace; dead-letter (and terminate) what cannot be decoded."""
    batch = Sorted()
    linking = otel.recording()
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
        sender = otel.span_context_of(msg.headers) if linking else None
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
            if may_wait is not None and may_wait(event):
                batch.may_wait.add(workspace_id)
            else:
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
    may_wait: MayWait | None = None,
    held: Held | None = None,
    late: LateAcks | None = None,
) -> None:
    """Each workspace of the batch handed to ``handle`` on its own; its messages acked
    after it returns, or naked with a growing delay if it failed (a poison event set aside
    once its cap is reached, ``poison.py``). With ``held``, a workspace whose events may
    all wait is held there, and one handed over takes what was held of it along. With
    ``late``, a workspace with nothing acted on has its messages acked there, together a
    moment later, rather than at once."""
    batch = await sort_batch(nc, names, msgs, service, wanted, may_wait if held else None)
    spans = batch.spans(service)
    aside = SetAside(nc, js, names, service, limits)
    try:
        for workspace_id, seq in batch.highest.items():
            workspace_msgs = batch.by_workspace[workspace_id]
            if workspace_id not in batch.acted_on:
                if held is not None and workspace_id in batch.may_wait:
                    held.hold(workspace_id, workspace_msgs, seq)
                    continue
                await ack(workspace_msgs, late)
                continue
            if held is not None and (waiting := held.take(workspace_id)) is not None:
                workspace_msgs, seq = waiting.msgs + workspace_msgs, max(seq, waiting.seq)
            if held is not None:
                held.folded(workspace_id, seq)

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
    may_wait: MayWait | None = None,
    held: Held | None = None,
    late: LateAcks | None = None,
) -> None:
    """The batch's workspaces handed to ``handle`` at once (``fold_together``); with
    ``held`` and ``late``, as ``settle_batch``: those whose events may all wait are held
    there, and those with nothing acted on acked a moment later."""
    batch = await sort_batch(nc, names, msgs, service, wanted, may_wait if held else None)
    spans = batch.spans(service)
    try:
        acted: dict[str, int] = {}
        msgs_of: dict[str, list[Msg]] = {}
        for workspace_id, workspace_msgs in batch.by_workspace.items():
            seq = batch.highest[workspace_id]
            if workspace_id in batch.acted_on:
                if held is not None and (waiting := held.take(workspace_id)) is not None:
                    workspace_msgs, seq = waiting.msgs + workspace_msgs, max(seq, waiting.seq)
                if held is not None:
                    held.folded(workspace_id, seq)
                acted[workspace_id], msgs_of[workspace_id] = seq, workspace_msgs
            elif held is not None and workspace_id in batch.may_wait:
                held.hold(workspace_id, workspace_msgs, seq)
            else:
                await ack(workspace_msgs, late)
        await fold_together(SetAside(nc, js, names, service, limits), handle, acted, msgs_of)
    finally:
        for span in spans:
            span.end()


async def ack(msgs: list[Msg], late: LateAcks | None) -> None:
    """Ack messages no fold waits for: with ``late``, together a moment later."""
    if late is not None:
        late.add(msgs)
        return
    await ack_all(msgs)


async def fold_together(
    aside: SetAside,
    handle: BatchHandler,
    acted: dict[str, int],
    msgs_of: dict[str, list[Msg]],
) -> None:
    """``acted``'s workspaces handed to ``handle`` at once; their messages (``msgs_of``)
    acked after it returns (its transaction committed). If it failed, each workspace is
    handed over alone at once, so the others commit and are acked while the one at fault
    is tried again later (or its poison event set aside, ``poison.py``)."""
    if not acted:
        return
    failed: Exception | None = None
    try:
        await handle(acted)
    except Exception as exc:
        failed = exc
    for workspace_id, workspace_msgs in msgs_of.items():
        if failed is None:
            await ack_all(workspace_msgs)
            continue

        async def alone(workspace_id: str = workspace_id) -> None:
            await handle({workspace_id: acted[workspace_id]})

        # One workspace alone failed already, and Postgres away fails every one alike:
        # that failure is decided on, not tried again at once.
        first = failed if len(acted) == 1 or database_away(failed) else None
        await aside.settle(workspace_id, workspace_msgs, alone, first)
