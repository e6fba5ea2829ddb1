"""Events a consumer does not act on are acked together a moment later (docs/adr/0168)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from chips_common.nats.streams import Names
from chips_common.service import consumer
from chips_common.service.consumer import settle_batch, settle_together
from chips_common.service.held import LateAcks
from libs.chips_common.tests.test_settle_batch import (
    Clock,
    CountingProbe,
    FakeFlow,
    FakeJetStream,
    FakeMsg,
    FakeSubscription,
)

NAMES = Names("CHIPS", "chips")


def msgs(*made: FakeMsg) -> list[Msg]:
    return cast(list[Msg], list(made))


def test_late_acks_are_due_after_their_wait_or_once_there_are_many() -> None:
    clock = Clock()
    late = LateAcks(wait=0.2, most=3, clock=clock)
    assert late.due() == [] and late.next_in(1.0) == 1.0
    a, b, c = (FakeMsg("ws_a", n, "x") for n in (1, 2, 3))
    late.add(msgs(a))
    clock.now += 0.15
    late.add(msgs(b))
    assert late.due() == [] and late.next_in(1.0) == pytest.approx(0.05)
    clock.now += 0.05
    assert late.due() == [a, b], "the wait counts from the first"
    assert late.next_in(1.0) == 1.0
    late.add(msgs(a, b, c))
    assert late.due() == [a, b, c], "three are as many as may wait"


async def test_a_workspace_with_nothing_acted_on_is_acked_late_not_at_once() -> None:
    late = LateAcks(wait=60.0, clock=Clock())
    wanted = {"message.post"}
    calls: list[Any] = []

    async def handle(workspace_id: str, seq: int) -> None:
        calls.append((workspace_id, seq))

    ignored, acted = FakeMsg("ws_a", 1, "run.started"), FakeMsg("ws_b", 2, "message.post")
    await settle_batch(
        cast(NATS, None), NAMES, msgs(ignored, acted), handle, "t", wanted, late=late
    )
    assert calls == [("ws_b", 2)] and acted.settled == "ack"
    assert ignored.settled is None and late.msgs == [ignored]

    async def handle_all(upto: Any) -> None:
        calls.append(dict(upto))

    other = FakeMsg("ws_c", 3, "run.started")
    await settle_together(cast(NATS, None), NAMES, msgs(other), handle_all, "t", wanted, late=late)
    assert other.settled is None and late.msgs == [ignored, other]


async def test_the_loop_acks_what_waits_once_due_and_the_rest_on_the_way_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(consumer, "LagProbe", CountingProbe)
    stop = asyncio.Event()
    clock = Clock()
    late = LateAcks(wait=1.0, clock=clock)
    first, second = FakeMsg("ws_a", 1, "run.started"), FakeMsg("ws_a", 2, "run.started")

    class Ticking(FakeFlow):
        async def next(self, timeout: float) -> list[FakeMsg]:
            clock.now += 0.6
            return await super().next(timeout)

    flow = Ticking([[first], None, None, [second]], stop)
    monkeypatch.setattr(consumer, "Flow", lambda sub, batch, **_: flow)
    seen: list[str | None] = []

    async def handle(workspace_id: str, seq: int) -> None:
        raise AssertionError("nothing here is acted on")

    async def settle(batch: list[Msg]) -> None:
        await settle_batch(cast(NATS, None), NAMES, batch, handle, "t", {"message.post"}, late=late)
        seen.append(first.settled)

    await asyncio.wait_for(
        consumer._consume(
            cast(JetStreamContext, FakeJetStream(FakeSubscription())),
            NAMES,
            "test",
            settle,
            stop,
            256,
            None,
            None,
            None,
            late,
        ),
        10,
    )
    assert seen == [None, "ack"], "not acked as it came; acked once its wait ran out"
    assert second.settled == "ack", "what still waited is acked on the way out"
