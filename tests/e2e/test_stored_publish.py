"""JetStream publishes with their store acks read lean (chips_common.nats.stored).

The gateway sends every append request and the eventlog every logged event this way
(docs/adr/0119). On a nats-server of the module's own: what the stream answers comes back
as nats-py's own ``PubAck`` or its own errors, in order, and nothing is left waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import nats
import pytest
from nats.aio.client import Client as NATS
from nats.js.api import DiscardPolicy, PubAck, StreamConfig
from nats.js.errors import APIError, NoStreamResponseError

from chips_common.nats.stored import StoredPublisher
from tests.e2e.afresh import afresh


@pytest.fixture
async def nc(own_nats: str) -> AsyncIterator[NATS]:
    client = await nats.connect(own_nats)
    js = client.jetstream()
    for name in ("STORED", "SMALL"):
        with contextlib.suppress(Exception):
            await js.delete_stream(name)
    await afresh(lambda: js.add_stream(StreamConfig(name="STORED", subjects=["stored.>"])))
    small = StreamConfig(name="SMALL", subjects=["small.>"], max_msgs=1, discard=DiscardPolicy.NEW)
    await afresh(lambda: js.add_stream(small))
    yield client
    await client.close()


async def test_each_publish_is_answered_with_its_place_in_the_stream(nc: NATS) -> None:
    publisher = StoredPublisher(nc)
    futures = [await publisher.publish("stored.a", str(i).encode()) for i in range(50)]
    acks = await asyncio.wait_for(asyncio.gather(*futures), 10)
    assert all(isinstance(a, PubAck) and a.stream == "STORED" for a in acks)
    assert [a.seq for a in acks] == list(range(1, 51))
    assert publisher.waiting == {}, "an answered publish is forgotten"
    stored = await nc.jetstream().get_msg("STORED", 50)
    assert stored.data == b"49"


async def test_a_copy_of_a_message_id_is_answered_as_a_duplicate(nc: NATS) -> None:
    publisher = StoredPublisher(nc)
    first = await (await publisher.publish("stored.b", b"one", {"Nats-Msg-Id": "evt_1"}))
    again = await (await publisher.publish("stored.b", b"one", {"Nats-Msg-Id": "evt_1"}))
    assert not first.duplicate
    assert again.duplicate and again.seq == first.seq


async def test_no_stream_and_a_refusing_stream_answer_with_errors(nc: NATS) -> None:
    publisher = StoredPublisher(nc)
    with pytest.raises(NoStreamResponseError):
        await asyncio.wait_for(await publisher.publish("nowhere.c", b"lost"), 10)
    taken = await asyncio.wait_for(await publisher.publish("small.d", b"fits"), 10)
    assert taken.seq == 1
    with pytest.raises(APIError) as refused:
        await asyncio.wait_for(await publisher.publish("small.d", b"full"), 10)
    assert refused.value.err_code == 10077  # maximum messages exceeded
    assert publisher.waiting == {}


async def test_a_publish_nobody_waits_for_any_more_is_forgotten(nc: NATS) -> None:
    publisher = StoredPublisher(nc)
    future = await publisher.publish("stored.e", b"late")
    future.cancel()
    await asyncio.sleep(0)  # a future's done callbacks run on the loop's next turn
    assert publisher.waiting == {}
    # Its ack, when it comes, finds nothing to answer; the next publish is answered.
    assert (await asyncio.wait_for(await publisher.publish("stored.e", b"next"), 10)).seq > 0
