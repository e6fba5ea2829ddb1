"""The consumers' flow of messages (chips_common.nats.pull.Flow) on a real nats-server.

Every CHIPS_EVENTS consumer reads through it: pull requests kept open rather than two
asked for each batch (docs/adr/0116). Here on a JetStream of its own, with a stream and a
durable consumer of the test's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import nats
import pytest
from nats.aio.client import Client as NATS
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig

from chips_common.nats.pull import ConsumerGone, Flow
from tests.e2e.afresh import afresh


@pytest.fixture
async def nc(own_nats: str) -> AsyncIterator[NATS]:
    client = await nats.connect(own_nats)
    js = client.jetstream()
    with contextlib.suppress(Exception):
        await js.delete_stream("FLOW")
    await afresh(lambda: js.add_stream(StreamConfig(name="FLOW", subjects=["flow.>"])))
    yield client
    await client.close()


async def subscribe(nc: NATS, durable: str = "reader") -> object:
    return await nc.jetstream().pull_subscribe(
        "flow.>",
        durable=durable,
        stream="FLOW",
        config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, max_ack_pending=20_000),
    )


async def drain(flow: Flow, want: int, timeout: float = 10) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        with contextlib.suppress(TimeoutError):
            for msg in await flow.next(timeout=1):
                got.append(msg.data)
                await msg.ack()
    return got


async def test_every_message_comes_once_in_order_in_batches_no_larger_than_asked(
    nc: NATS,
) -> None:
    js = nc.jetstream()
    for i in range(30):  # before the flow starts
        await js.publish(f"flow.{i % 3}", str(i).encode())
    sub = await subscribe(nc)
    flow = Flow(sub, batch=8, expires=2.0)
    sizes: list[int] = []
    got: list[bytes] = []
    while len(got) < 30:
        batch = await flow.next(timeout=5)
        sizes.append(len(batch))
        for msg in batch:
            got.append(msg.data)
            await msg.ack()
    for i in range(30, 60):  # while it runs
        await js.publish(f"flow.{i % 3}", str(i).encode())
    got += await drain(flow, 30)
    assert got == [str(i).encode() for i in range(60)]
    assert max(sizes) <= 8
    # The acks are on their way (a publish each); the server counts them as they come.
    deadline = time.monotonic() + 10
    info = await js.consumer_info("FLOW", "reader")
    while info.num_ack_pending and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        info = await js.consumer_info("FLOW", "reader")
    assert info.num_ack_pending == 0 and info.num_pending == 0
    # It keeps at most a couple of requests open, not one per batch handed out.
    assert info.num_waiting <= 2


async def test_an_idle_flow_times_out_and_still_hears_what_comes_after_its_requests_expired(
    nc: NATS,
) -> None:
    sub = await subscribe(nc, "idle")
    flow = Flow(sub, batch=8, expires=0.5)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await flow.next(timeout=1.5)
    assert time.monotonic() - started >= 1.4
    # Past three expiries: what is published now comes on a request asked again.
    await nc.jetstream().publish("flow.late", b"late")
    batch = await asyncio.wait_for(flow.next(timeout=5), 6)
    assert [m.data for m in batch] == [b"late"]


async def test_a_consumer_deleted_under_an_open_request_is_told_to_the_loop(nc: NATS) -> None:
    js = nc.jetstream()
    sub = await subscribe(nc, "doomed")
    flow = Flow(sub, batch=8, expires=5.0)
    await flow.ask()
    deadline = time.monotonic() + 5
    while (await js.consumer_info("FLOW", "doomed")).num_waiting == 0:
        assert time.monotonic() < deadline, "the pull request never reached the consumer"
        await asyncio.sleep(0.02)
    await js.delete_consumer("FLOW", "doomed")
    with pytest.raises(ConsumerGone):
        await flow.next(timeout=3)


async def test_asking_a_consumer_that_is_gone_is_told_to_the_loop(nc: NATS) -> None:
    sub = await subscribe(nc, "gone")
    flow = Flow(sub, batch=8, expires=5.0)
    await nc.jetstream().delete_consumer("FLOW", "gone")
    with pytest.raises(ConsumerGone):
        await flow.next(timeout=3)


async def test_what_arrived_and_was_not_handed_out_is_given_back_at_once(nc: NATS) -> None:
    js = nc.jetstream()
    for i in range(5):
        await js.publish("flow.back", str(i).encode())
    sub = await subscribe(nc, "back")
    flow = Flow(sub, batch=2, expires=5.0)
    first = await flow.next(timeout=5)
    for msg in first:
        await msg.ack()
    # Two more come on the request asked for next; nobody takes them.
    await flow.ask()
    for _ in range(250):  # up to 5 s
        if flow.queue.qsize() >= 2:
            break
        await asyncio.sleep(0.02)
    assert await flow.give_back() == 2
    await sub.unsubscribe()
    # Another reader gets them now, not after the ack wait (30 s by default).
    other = Flow(await subscribe(nc, "back"), batch=8, expires=5.0)
    again = await drain(other, 3, timeout=5)
    assert sorted(again) == [b"2", b"3", b"4"]
