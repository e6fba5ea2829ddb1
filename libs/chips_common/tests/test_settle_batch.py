"""A consumer's batch: handled per workspace (or all together), and skipped where nothing
is wanted."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any, cast

import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext

from chips_common.nats.streams import Names
from chips_common.service import consumer
from chips_common.service.consumer import settle_batch, settle_together
from chips_common.service.held import Held


class FakeMsg:
    """What settle_batch reads of a NATS message, and how it was settled."""

    def __init__(self, workspace_id: str, seq: int, type_: str) -> None:
        body = {"workspace_id": workspace_id, "seq": seq, "type": type_}
        self.data = json.dumps(body).encode()
        self.headers: dict[str, str] = {}
        self.subject = f"chips.events.{workspace_id}"
        self.settled: str | None = None

    async def ack(self) -> None:
        self.settled = "ack"

    async def nak(self, delay: float | None = None) -> None:
        self.settled = "nak"

    async def term(self) -> None:
        self.settled = "term"


async def settle(msgs: list[FakeMsg], wanted: consumer.Wanted | None) -> list[tuple[str, int]]:
    calls: list[tuple[str, int]] = []

    async def handle(workspace_id: str, seq: int) -> None:
        calls.append((workspace_id, seq))

    nc = cast(NATS, None)  # only a dead letter would use it
    names = cast(Names, None)
    await settle_batch(nc, names, cast(list[Msg], msgs), handle, "test", wanted)
    return calls


async def test_every_workspace_is_handled_up_to_its_highest_seq() -> None:
    msgs = [FakeMsg("ws_a", 1, "message.post"), FakeMsg("ws_b", 4, "message.post")]
    msgs.append(FakeMsg("ws_a", 2, "space.updated"))
    assert await settle(msgs, None) == [("ws_a", 2), ("ws_b", 4)]
    assert all(m.settled == "ack" for m in msgs)


async def test_a_workspace_with_nothing_wanted_is_acked_without_its_handler() -> None:
    quiet = [FakeMsg("ws_a", 1, "message.post"), FakeMsg("ws_a", 2, "message.post")]
    erased = [FakeMsg("ws_b", 7, "message.post"), FakeMsg("ws_b", 8, "space.erased")]
    calls = await settle([*quiet, *erased], frozenset({"space.erased"}))
    assert calls == [("ws_b", 8)]
    assert all(m.settled == "ack" for m in [*quiet, *erased])


async def test_what_is_wanted_may_be_a_test_of_the_decoded_event() -> None:
    quiet = [FakeMsg("ws_a", 1, "message.post"), FakeMsg("ws_a", 2, "space.updated")]
    asked = [FakeMsg("ws_b", 3, "space.updated"), FakeMsg("ws_b", 4, "question.ask")]

    def wanted(event: Mapping[str, Any]) -> bool:
        return event["type"] == "question.ask"

    calls = await settle([*quiet, *asked], wanted)
    assert calls == [("ws_b", 4)]
    assert all(m.settled == "ack" for m in [*quiet, *asked])


async def test_a_failed_handler_naks_its_workspace_only() -> None:
    msgs: list[Any] = [FakeMsg("ws_a", 1, "space.erased"), FakeMsg("ws_b", 2, "space.erased")]

    async def handle(workspace_id: str, seq: int) -> None:
        if workspace_id == "ws_a":
            raise RuntimeError("the database went away")

    await settle_batch(cast(NATS, None), cast(Names, None), msgs, handle, "test", None)
    assert [m.settled for m in msgs] == ["nak", "ack"]


async def test_together_every_workspace_is_handled_in_one_call() -> None:
    calls: list[dict[str, int]] = []

    async def handle(highest: Mapping[str, int]) -> None:
        calls.append(dict(highest))

    msgs: list[Any] = [FakeMsg("ws_a", 1, "message.post"), FakeMsg("ws_b", 4, "message.post")]
    msgs += [FakeMsg("ws_a", 3, "space.updated"), FakeMsg("ws_c", 9, "space.updated")]
    await settle_together(
        cast(NATS, None), cast(Names, None), msgs, handle, "test", frozenset({"message.post"})
    )
    assert calls == [{"ws_a": 3, "ws_b": 4}]
    assert all(m.settled == "ack" for m in msgs)


async def test_together_a_failed_handler_naks_what_it_was_handed() -> None:
    async def handle(highest: Mapping[str, int]) -> None:
        raise RuntimeError("the database went away")

    msgs: list[Any] = [FakeMsg("ws_a", 1, "message.post"), FakeMsg("ws_b", 2, "space.updated")]
    await settle_together(
        cast(NATS, None), cast(Names, None), msgs, handle, "test", frozenset({"message.post"})
    )
    assert [m.settled for m in msgs] == ["nak", "ack"]


class FakeFlow:
    """Stands for the consumer's flow of messages: each ``next`` answers from a script, a
    batch or a timeout; when the script runs out it stops the loop."""

    pace = None  # not paced

    def __init__(self, script: list[list[FakeMsg] | None], stop: asyncio.Event) -> None:
        self.script = script
        self.stop = stop
        self.turns = 0

    async def next(self, timeout: float) -> list[FakeMsg]:
        self.turns += 1
        await asyncio.sleep(0)
        if not self.script:
            self.stop.set()
            raise TimeoutError
        answer = self.script.pop(0)
        if answer is None:
            raise NatsTimeout
        return answer


class FakeSubscription:
    def __init__(self) -> None:
        self.unsubscribed = False

    async def unsubscribe(self) -> None:
        self.unsubscribed = True


class FakeJetStream:
    def __init__(self, sub: FakeSubscription) -> None:
        self.sub = sub

    async def pull_subscribe(self, *args: Any, **kwargs: Any) -> FakeSubscription:
        return self.sub


class CountingProbe:
    """Stands for the lag probe, which the loop calls once a turn: counts the turns, so a
    loop that spins fails rather than hangs."""

    def __init__(self, *args: Any) -> None:
        self.turns = 0

    async def maybe_update(self, js: Any) -> None:
        self.turns += 1
        assert self.turns < 50, "the loop spins"


async def test_the_loop_handles_every_batch_in_order_through_timeouts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Turns that time out (an idle stream) are waited out again; every batch is handled
    once, in order, and the subscription is let go when the loop stops."""
    monkeypatch.setattr(consumer, "LagProbe", CountingProbe)
    stop = asyncio.Event()
    one, two, three = (FakeMsg("ws_a", n, "message.post") for n in (1, 2, 3))
    flow = FakeFlow([None, [one], None, None, [two, three], None], stop)
    monkeypatch.setattr(consumer, "Flow", lambda sub, batch, **_: flow)
    sub = FakeSubscription()
    handled: list[dict[str, int]] = []

    async def handle(highest: Mapping[str, int]) -> None:
        handled.append(dict(highest))
        await asyncio.sleep(0)

    names = Names("CHIPS", "chips")
    await asyncio.wait_for(
        consumer._consume(
            cast(JetStreamContext, FakeJetStream(sub)),
            names,
            "test",
            lambda msgs: settle_together(cast(NATS, None), names, msgs, handle, "test"),
            stop,
            256,
        ),
        5,
    )
    assert handled == [{"ws_a": 1}, {"ws_a": 3}]
    assert all(m.settled == "ack" for m in (one, two, three))
    assert flow.turns == 7 and sub.unsubscribed


async def test_a_batch_costs_one_span_linked_to_every_event_s_append() -> None:
    """One receive span per batch (per 128 events), linked to each event's sender with its
    workspace, seq and type; an event without a trace context is handled, unlinked."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    original = consumer.tracer
    consumer.tracer = provider.get_tracer("test")
    try:
        msgs: list[Any] = []
        for n in range(1, 131):
            msg = FakeMsg("ws_a" if n % 2 else "ws_b", n, "message.post")
            msg.headers = {"traceparent": f"00-{n:032x}-{n:016x}-01"}
            msgs.append(msg)
        msgs.append(FakeMsg("ws_a", 131, "message.post"))  # no trace context
        calls: list[dict[str, int]] = []

        async def handle(highest: Mapping[str, int]) -> None:
            calls.append(dict(highest))

        await settle_together(cast(NATS, None), cast(Names, None), msgs, handle, "test")
    finally:
        consumer.tracer = original
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["test.receive", "test.receive"]
    links = [link for s in spans for link in s.links]
    assert [link.context.trace_id for link in links] == list(range(1, 131))
    assert links[2].attributes == {
        "chips.workspace_id": "ws_a",
        "chips.seq": 3,
        "chips.event_type": "message.post",
    }
    assert [len(s.links) for s in spans] == [128, 2]
    assert calls == [{"ws_a": 131, "ws_b": 130}]
    assert all(m.settled == "ack" for m in msgs)


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "",
        "01-" + "1" * 32 + "-" + "2" * 16 + "-01",
        "00-" + "0" * 32 + "-" + "2" * 16 + "-01",
        "00-" + "x" * 32 + "-" + "2" * 16 + "-01",
        "00-abc",
    ],
)
def test_a_traceparent_that_is_not_one_links_nothing(raw: str | None) -> None:
    from chips_common import otel

    assert otel.span_context_of({"traceparent": raw} if raw is not None else {}) is None


def test_a_traceparent_is_read_as_the_propagator_reads_it() -> None:
    from opentelemetry import trace

    from chips_common import otel

    raw = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    ours = otel.span_context_of({"traceparent": raw})
    theirs = trace.get_current_span(otel.extract({"traceparent": raw})).get_span_context()
    assert ours == theirs
    stored = trace.get_current_span(otel.from_traceparent(raw)).get_span_context()
    assert stored == theirs
    assert not trace.get_current_span(otel.from_traceparent(None)).get_span_context().is_valid


# -- events whose fold may wait (docs/adr/0162) -------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_held_messages_are_due_once_their_wait_runs_out() -> None:
    clock = Clock()
    held = Held(wait=1.0, most=10, clock=clock)
    a1, a2, b1 = FakeMsg("ws_a", 1, "x"), FakeMsg("ws_a", 3, "x"), FakeMsg("ws_b", 2, "x")
    held.hold("ws_a", cast(list[Msg], [a1]), 1)
    clock.now += 0.6
    held.hold("ws_b", cast(list[Msg], [b1]), 2)
    held.hold("ws_a", cast(list[Msg], [a2]), 3)
    assert held.count == 3
    assert held.next_in(5.0) == pytest.approx(0.4)
    assert held.due() == {}
    clock.now += 0.4
    due = held.due()
    assert list(due) == ["ws_a"]
    assert (due["ws_a"].seq, due["ws_a"].msgs) == (3, [a1, a2])
    assert held.count == 1 and held.next_in(5.0) == pytest.approx(0.6)
    assert held.take("ws_b") is not None and held.take("ws_b") is None
    assert held.count == 0 and held.next_in(5.0) == 5.0


def test_every_workspace_is_due_at_once_when_too_many_are_held() -> None:
    held = Held(wait=60.0, most=3, clock=Clock())
    held.hold("ws_a", cast(list[Msg], [FakeMsg("ws_a", 1, "x")]), 1)
    held.hold("ws_b", cast(list[Msg], [FakeMsg("ws_b", 1, "x")] * 2), 1)
    assert set(held.due()) == {"ws_a", "ws_b"} and held.count == 0


def person_post(event: Mapping[str, Any]) -> bool:
    return event["type"] == "message.post"


async def test_a_workspace_whose_events_may_wait_is_held_then_handed_over_with_the_next() -> None:
    calls: list[tuple[str, int]] = []

    async def handle(workspace_id: str, seq: int) -> None:
        calls.append((workspace_id, seq))

    held = Held(wait=60.0)
    nc, names = cast(NATS, None), cast(Names, None)
    first = [FakeMsg("ws_a", 1, "message.post"), FakeMsg("ws_b", 2, "run.started")]
    await settle_batch(nc, names, cast(list[Msg], first), handle, may_wait=person_post, held=held)
    assert calls == [("ws_b", 2)]
    assert [m.settled for m in first] == [None, "ack"], "ws_a is held, unacked"
    then = [FakeMsg("ws_a", 2, "message.post")]
    await settle_batch(nc, names, cast(list[Msg], then), handle, may_wait=person_post, held=held)
    assert calls == [("ws_b", 2)] and then[0].settled is None
    last = [FakeMsg("ws_a", 3, "run.started")]
    await settle_batch(nc, names, cast(list[Msg], last), handle, may_wait=person_post, held=held)
    assert calls == [("ws_b", 2), ("ws_a", 3)], "one fold past everything held"
    assert all(m.settled == "ack" for m in [*first, *then, *last])
    assert held.count == 0


async def test_held_messages_share_their_workspace_s_failure() -> None:
    async def handle(workspace_id: str, seq: int) -> None:
        raise RuntimeError("the database went away")

    held = Held(wait=60.0)
    nc, names = cast(NATS, None), cast(Names, None)
    waiting = [FakeMsg("ws_a", 1, "message.post")]
    await settle_batch(nc, names, cast(list[Msg], waiting), handle, may_wait=person_post, held=held)
    now = [FakeMsg("ws_a", 2, "run.started")]
    await settle_batch(nc, names, cast(list[Msg], now), handle, may_wait=person_post, held=held)
    assert [m.settled for m in [*waiting, *now]] == ["nak", "nak"]


async def test_together_held_workspaces_go_with_the_next_batch_that_acts_on_them() -> None:
    calls: list[dict[str, int]] = []

    async def handle(highest: Mapping[str, int]) -> None:
        calls.append(dict(highest))

    held = Held(wait=60.0)
    nc, names = cast(NATS, None), cast(Names, None)
    first = [FakeMsg("ws_a", 4, "message.post"), FakeMsg("ws_b", 5, "space.updated")]
    await settle_together(
        nc, names, cast(list[Msg], first), handle, may_wait=person_post, held=held
    )
    assert calls == [{"ws_b": 5}] and first[0].settled is None
    then = [FakeMsg("ws_a", 6, "space.updated")]
    await settle_together(nc, names, cast(list[Msg], then), handle, may_wait=person_post, held=held)
    assert calls == [{"ws_b": 5}, {"ws_a": 6}]
    assert all(m.settled == "ack" for m in [*first, *then])


async def test_the_loop_hands_over_what_waited_once_its_wait_ran_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing else of the workspace comes: the loop folds it once its wait ran out, and
    naks what is still held when it stops."""
    monkeypatch.setattr(consumer, "LagProbe", CountingProbe)
    stop = asyncio.Event()
    clock = Clock()
    held = Held(wait=1.0, clock=clock)
    early = FakeMsg("ws_a", 1, "message.post")
    late = FakeMsg("ws_b", 2, "message.post")

    class Ticking(FakeFlow):
        async def next(self, timeout: float) -> list[FakeMsg]:
            clock.now += 0.6  # each turn, the time asked of it passes
            return await super().next(timeout)

    flow = Ticking([[early], None, None, [late]], stop)
    monkeypatch.setattr(consumer, "Flow", lambda sub, batch, **_: flow)
    names = Names("CHIPS", "chips")
    nc = cast(NATS, None)
    calls: list[tuple[str, int]] = []

    async def handle(workspace_id: str, seq: int) -> None:
        calls.append((workspace_id, seq))

    async def settle(msgs: list[Msg]) -> None:
        await settle_batch(nc, names, msgs, handle, may_wait=person_post, held=held)

    async def settle_due(due: dict[str, Any]) -> None:
        for workspace_id, waiting in due.items():
            await handle(workspace_id, waiting.seq)
            for msg in waiting.msgs:
                await msg.ack()

    sub = FakeSubscription()
    await asyncio.wait_for(
        consumer._consume(
            cast(JetStreamContext, FakeJetStream(sub)),
            names,
            "test",
            settle,
            stop,
            256,
            held,
            settle_due,
        ),
        5,
    )
    assert calls == [("ws_a", 1)]
    assert early.settled == "ack"
    assert late.settled == "nak", "still held when the loop stopped: handed out again"
    assert held.count == 0 and sub.unsubscribed
