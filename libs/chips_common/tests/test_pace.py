"""A paced flow asks for one message, then for nothing until a moment after it came, then
for everything waiting at once (docs/adr/0168)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import orjson
from nats.js import JetStreamContext

from chips_common.nats.pull import COLLECT, FETCH, IDLE, Flow, Pace
from libs.chips_common.tests.test_nudge import FakePull
from libs.chips_common.tests.test_settle_batch import Clock, FakeMsg


def test_idle_it_asks_for_one_message_and_waits() -> None:
    pace = Pace(0.25, batch=100, clock=Clock())
    assert pace.ask(credit=0) == {"batch": 1}
    assert pace.ask(credit=1) is None, "one request open is enough"
    assert pace.state == IDLE and pace.wait(2.0) == 2.0


def test_the_first_message_starts_a_quiet_while_then_everything_is_fetched() -> None:
    clock = Clock()
    pace = Pace(0.25, batch=100, clock=clock)
    pace.ask(credit=0)
    pace.came()
    assert pace.state == COLLECT
    assert pace.ask(credit=0) is None and pace.wait(2.0) == 0.25
    clock.now += 0.25
    assert pace.ask(credit=0) == {"batch": 100, "no_wait": True}
    assert pace.state == FETCH and pace.wait(2.0) == 2.0
    for _ in range(3):
        pace.came()
    # The page ended (a status) with three: quiet again, then fetch again.
    assert pace.ask(credit=0) is None and pace.state == COLLECT
    clock.now += 0.25
    assert pace.ask(credit=0) == {"batch": 100, "no_wait": True}
    # Nothing came this time: back to one lingering request.
    assert pace.ask(credit=0) == {"batch": 1} and pace.state == IDLE


def test_a_full_page_is_followed_by_another_at_once() -> None:
    clock = Clock()
    pace = Pace(0.25, batch=2, clock=clock)
    pace.ask(credit=0)
    pace.came()
    clock.now += 0.3
    assert pace.ask(credit=0) == {"batch": 2, "no_wait": True}
    pace.came()
    pace.came()
    assert pace.ask(credit=0) == {"batch": 2, "no_wait": True}, "more may be waiting"


def test_now_ends_the_quiet_while() -> None:
    clock = Clock()
    pace = Pace(60.0, batch=100, clock=clock)
    pace.ask(credit=0)
    pace.came()
    assert pace.ask(credit=0) is None
    pace.now()
    assert pace.ask(credit=0) == {"batch": 100, "no_wait": True}


def status(code: str) -> Any:
    msg = FakeMsg("ws_a", 0, "x")
    msg.data = b""
    msg.headers = {"Status": code}
    return msg


async def test_a_paced_flow_asks_once_then_fetches_when_woken() -> None:
    pull = FakePull()
    flow = Flow(cast(JetStreamContext.PullSubscription, pull), batch=10, pace=60.0)
    queue = pull._sub._pending_queue
    first, second, third = (FakeMsg("ws_a", n, "message.post") for n in (1, 2, 3))
    for msg in (first, second, third):
        msg.headers = {}

    waiting = asyncio.ensure_future(flow.next(timeout=30))
    await asyncio.sleep(0)
    queue.put_nowait(first)
    assert await asyncio.wait_for(waiting, 10) == [first]
    asked = [orjson.loads(a) for a in pull.asked]
    assert asked == [{"batch": 1, "expires": 2_000_000_000}]

    flow.wake()  # a reader asks: what waits is fetched now, not a minute later
    assert await asyncio.wait_for(flow.next(timeout=30), 10) == []
    waiting = asyncio.ensure_future(flow.next(timeout=30))
    await asyncio.sleep(0)
    for msg in (second, third, status("408")):
        queue.put_nowait(msg)
    assert await asyncio.wait_for(waiting, 10) == [second, third]
    asked = [orjson.loads(a) for a in pull.asked]
    assert asked[1:] == [{"batch": 10, "no_wait": True}]
    assert flow.pace is not None and flow.pace.state == FETCH
    assert flow.asks.credit() == 0, "the status ended the page"
