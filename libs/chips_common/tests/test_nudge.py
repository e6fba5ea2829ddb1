"""A reader asks a consumer holding events for a workspace (docs/adr/0168): the nudge's
wire form, what the held messages do with an ask, the flow woken, and the loop folding a
workspace asked for before its wait ran out."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, cast

import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from chips_common.nats import nudge
from chips_common.nats.pull import Flow
from chips_common.nats.streams import Names
from chips_common.service import consumer
from chips_common.service.consumer import settle_batch
from chips_common.service.held import Held
from libs.chips_common.tests.test_settle_batch import (
    Clock,
    CountingProbe,
    FakeFlow,
    FakeJetStream,
    FakeMsg,
    FakeSubscription,
    person_post,
)

NAMES = Names("CHIPS", "chips")


def test_a_nudge_names_a_workspace_and_a_seq() -> None:
    assert nudge.fold_subject(NAMES, "projector") == "chips.fold.projector"
    assert nudge.decode(nudge.encode("ws_a", 12)) == ("ws_a", 12)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b"[]",
        b'{"workspace_id": "ws_a"}',
        b'{"seq": 3}',
        b'{"workspace_id": "", "seq": 3}',
        b'{"workspace_id": 7, "seq": 3}',
        b'{"workspace_id": "ws_a", "seq": "3"}',
        b'{"workspace_id": "ws_a", "seq": -1}',
        b'{"workspace_id": "ws_a", "seq": true}',
    ],
)
def test_a_nudge_that_names_neither_is_nothing(data: bytes) -> None:
    assert nudge.decode(data) is None


def msgs(*made: FakeMsg) -> list[Msg]:
    return cast(list[Msg], list(made))


def test_a_held_workspace_asked_for_is_due_at_once() -> None:
    clock = Clock()
    held = Held(wait=60.0, clock=clock)
    held.hold("ws_a", msgs(FakeMsg("ws_a", 4, "message.post")), 4)
    held.hold("ws_b", msgs(FakeMsg("ws_b", 2, "message.post")), 2)
    assert held.due() == {} and held.next_in(5.0) == 5.0
    assert held.want("ws_a", 4) is True
    assert held.next_in(5.0) == 0.0
    due = held.due()
    assert list(due) == ["ws_a"] and due["ws_a"].seq == 4
    assert held.wanted == {}, "the fold reaches the seq asked for: the ask is answered"
    assert list(held.by_workspace) == ["ws_b"] and held.next_in(5.0) == 5.0


def test_an_ask_before_the_messages_come_folds_them_as_they_come() -> None:
    held = Held(wait=60.0, clock=Clock())
    assert held.want("ws_a", 7) is False
    assert held.due() == {}
    held.hold("ws_a", msgs(FakeMsg("ws_a", 5, "message.post")), 5)
    assert list(held.due()) == ["ws_a"]
    assert "ws_a" in held.wanted, "seq 7 has not come yet: still asked for"
    held.hold("ws_a", msgs(FakeMsg("ws_a", 7, "message.post")), 7)
    assert list(held.due()) == ["ws_a"] and held.wanted == {}


def test_an_ask_keeps_the_highest_seq_and_lapses_after_its_time() -> None:
    clock = Clock()
    held = Held(wait=60.0, clock=clock, want_for=5.0)
    held.want("ws_a", 9)
    held.want("ws_a", 3)
    assert held.wanted["ws_a"][0] == 9
    clock.now += 5.0
    held.hold("ws_a", msgs(FakeMsg("ws_a", 4, "message.post")), 4)
    assert list(held.due()) == ["ws_a"], "asked for still, until the next look"
    assert held.wanted == {}, "past its time, the ask is dropped"
    held.hold("ws_a", msgs(FakeMsg("ws_a", 5, "message.post")), 5)
    assert held.due() == {}, "held again, for its wait"


def test_a_fold_that_reaches_the_seq_answers_the_ask() -> None:
    held = Held(wait=60.0, clock=Clock())
    held.want("ws_a", 6)
    held.folded("ws_a", 5)
    assert "ws_a" in held.wanted
    held.folded("ws_a", 6)
    assert held.wanted == {}


class FakeSub:
    """What Flow reads of nats-py's pull subscription."""

    def __init__(self) -> None:
        self._pending_queue: asyncio.Queue[Any] = asyncio.Queue()
        self._pending_size = 0


class FakePull:
    def __init__(self) -> None:
        self._sub = FakeSub()
        self._nms = "$JS.API.CONSUMER.MSG.NEXT.S.c"
        self._deliver = "_INBOX.x"
        self.asked: list[bytes] = []
        self._nc = self

    async def publish(self, subject: str, payload: bytes, reply: str = "") -> None:
        self.asked.append(payload)


async def test_a_woken_flow_returns_what_it_has() -> None:
    pull = FakePull()
    flow = Flow(cast(JetStreamContext.PullSubscription, pull), batch=10)
    waiting = asyncio.ensure_future(flow.next(timeout=60))
    await asyncio.sleep(0)
    assert not waiting.done()
    flow.wake()
    assert await asyncio.wait_for(waiting, 10) == [], "woken with nothing come: nothing"

    message = FakeMsg("ws_a", 1, "message.post")
    message.headers = {}
    pull._sub._pending_queue.put_nowait(message)
    flow.wake()
    assert await asyncio.wait_for(flow.next(timeout=60), 10) == [message]
    assert flow.woken is False


class FakeNats:
    """Hears what the loop subscribes to, so the test can nudge it."""

    def __init__(self) -> None:
        self.subscribed: dict[str, Callable[[Any], Awaitable[None]]] = {}
        self.unsubscribed = 0

    async def subscribe(self, subject: str, cb: Callable[[Any], Awaitable[None]]) -> Any:
        self.subscribed[subject] = cb
        return self

    async def unsubscribe(self) -> None:
        self.unsubscribed += 1


async def test_the_loop_folds_a_workspace_asked_for_before_its_wait_ran_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(consumer, "LagProbe", CountingProbe)
    stop = asyncio.Event()
    held = Held(wait=3600.0, clock=Clock())  # its wait never runs out in this test
    post = FakeMsg("ws_a", 1, "message.post")
    other = FakeMsg("ws_b", 2, "message.post")
    nc = FakeNats()

    class Nudged(FakeFlow):
        """The second turn: a reader asks for ws_a while the loop waits."""

        woken = 0

        def wake(self) -> None:
            self.woken += 1

        async def next(self, timeout: float) -> list[FakeMsg]:
            if self.turns == 1:
                self.turns += 1
                hear = nc.subscribed["chips.fold.test"]
                await hear(Nudge(b"{}"))  # names nothing: not heard
                await hear(Nudge(nudge.encode("ws_a", 1)))
                return []
            return await super().next(timeout)

    flow = Nudged([[post, other]], stop)
    monkeypatch.setattr(consumer, "Flow", lambda sub, batch, **_: flow)
    calls: list[tuple[str, int]] = []

    async def handle(workspace_id: str, seq: int) -> None:
        calls.append((workspace_id, seq))

    async def settle(batch: list[Msg]) -> None:
        await settle_batch(cast(NATS, None), NAMES, batch, handle, may_wait=person_post, held=held)

    async def settle_due(due: dict[str, Any]) -> None:
        for workspace_id, waiting in due.items():
            await handle(workspace_id, waiting.seq)
            for msg in waiting.msgs:
                await msg.ack()

    await asyncio.wait_for(
        consumer._consume(
            cast(JetStreamContext, FakeJetStream(FakeSubscription())),
            NAMES,
            "test",
            settle,
            stop,
            256,
            held,
            settle_due,
            cast(NATS, nc),
        ),
        10,
    )
    assert calls == [("ws_a", 1)], "ws_a folded when asked for; ws_b still held"
    assert flow.woken == 1, "the one nudge that named a held workspace woke the flow"
    assert post.settled == "ack"
    assert other.settled == "nak", "what is still held is handed back on the way out"
    assert nc.unsubscribed == 1


class Nudge:
    def __init__(self, data: bytes) -> None:
        self.data = data
