"""The one appender every writer to the log sends through (chips_common.nats.appender).

On a nats-server of the module's own, with the append stream declared as the services
declare it and no eventlog: the test reads the requests from the stream and answers them on
their reply subjects as the eventlog does, so it decides when and in what order each is
answered. Requests sent one after another enter the stream in that order without waiting
for one another; each answer finds its own request; a request the stream does not store,
or nobody answers, fails as its writer says; and the gateway's own policy (its checks, its
errors) sits on top of the same path.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import nats
import orjson
import pytest
from nats.aio.client import Client as NATS

from chips_common.append import Actor, AppendAnswer, AppendRequest
from chips_common.nats.appender import Appender, Unavailable
from chips_common.nats.streams import HDR_REPLY, Names, declare_streams
from chips_gateway.appender import AppendClient
from chips_gateway.errors import ChipsError
from tests.e2e.afresh import afresh

NAMES = Names("APPTEST", "apptest", 1)
SYSTEM = Actor(kind="system", id="system")


@pytest.fixture
async def nc(own_nats: str) -> AsyncIterator[NATS]:
    client = await nats.connect(own_nats)
    js = client.jetstream()
    for stream in (NAMES.append_stream, NAMES.events_stream, NAMES.dead_letter_stream):
        with contextlib.suppress(Exception):  # not there yet
            await js.delete_stream(stream)
    await afresh(lambda: declare_streams(js, NAMES))
    yield client
    await client.close()


async def stored_requests(nc: NATS, count: int) -> list[tuple[AppendRequest, str]]:
    """The append stream's requests as the eventlog reads them, with their reply subjects."""
    js = nc.jetstream()
    out: list[tuple[AppendRequest, str]] = []
    for seq in range(1, count + 1):
        msg = await js.get_msg(NAMES.append_stream, seq)
        assert msg.headers is not None and msg.data is not None
        out.append((AppendRequest.model_validate_json(msg.data), msg.headers[HDR_REPLY]))
    return out


async def test_requests_enter_the_stream_in_the_order_sent_and_each_finds_its_answer(
    nc: NATS,
) -> None:
    appender = Appender(nc, NAMES, 10.0, "apptest-one")
    await appender.start()
    # Sent one after another, none waiting for the last one's ack or answer.
    futures = [
        await appender.send(
            "ws_1", "crd_t", SYSTEM, f"k{i}", [{"type": "message.post", "text": str(i)}]
        )
        for i in range(40)
    ]
    assert not any(f.done() for f in futures)
    # Every request is stored, in the order it was sent.
    for _ in range(100):
        info = await nc.jetstream().stream_info(NAMES.append_stream)
        if info.state.messages == 40:
            break
        await asyncio.sleep(0.05)
    stored = await stored_requests(nc, 40)
    assert [r.idempotency_key for r, _ in stored] == [f"k{i}" for i in range(40)]
    assert all(r.fingerprint is None for r, _ in stored), "Chips' own keys carry no fingerprint"
    # Answered last first: each future gets its own request's answer.
    for seq, (request, reply) in reversed(list(enumerate(stored, 1))):
        answer = AppendAnswer(request_id=request.request_id, ok=True, seqs=[seq])
        await nc.publish(reply, answer.model_dump_json().encode())
    answers = await asyncio.wait_for(asyncio.gather(*map(appender.wait, futures)), 10)
    assert [a.seqs for a in answers] == [[i] for i in range(1, 41)]
    assert appender.waiting == {} and appender.sent_at == {} and appender.stored == {}
    await appender.stop()


async def test_a_request_the_stream_does_not_store_fails_at_once_and_one_unanswered_times_out(
    nc: NATS,
) -> None:
    appender = Appender(nc, NAMES, 0.5, "apptest-two")
    await appender.start()
    # No stream takes the subject: the stream's refusal fails the request long before the
    # timeout would (a different appender whose subjects no stream holds).
    lost = Appender(nc, Names("NOWHERE", "nowhere", 1), 30.0, "apptest-lost")
    await lost.start()
    future = await lost.send("ws_1", "crd_t", SYSTEM, "k", [{"type": "message.post"}])
    with pytest.raises(Unavailable) as unstored:
        await asyncio.wait_for(future, 5)
    assert unstored.value.why == "unstored"
    # Stored, and nobody answers: the wait gives up after the timeout, and expire fails a
    # request at once.
    with pytest.raises(Unavailable) as late:
        await appender.wait(
            await appender.send("ws_1", "crd_t", SYSTEM, "k2", [{"type": "message.post"}])
        )
    assert late.value.why == "timeout"
    expired = await appender.send("ws_1", "crd_t", SYSTEM, "k3", [{"type": "message.post"}])
    appender.expire(expired)
    with pytest.raises(Unavailable):
        await expired
    await asyncio.sleep(0)  # a future's done callbacks run on the loop's next turn
    assert appender.waiting == {} and lost.waiting == {}
    await appender.stop()
    await lost.stop()


async def test_the_gateway_keeps_its_own_policy_on_the_same_path(nc: NATS) -> None:
    client = AppendClient(nc, NAMES, "apptest-gw", 0.5)
    await client.start()
    person = {"kind": "person", "id": "usr_1"}
    # What the path cannot carry is refused before it goes: nothing is stored.
    before = (await nc.jetstream().stream_info(NAMES.append_stream)).state.messages
    with pytest.raises(ChipsError) as nul:
        await client.send("ws_1", "crd_t", person, "k", [{"type": "message.post", "text": "\0"}])
    assert nul.value.code == "invalid_request"
    with pytest.raises(ChipsError) as large:
        await client.send(
            "ws_1", "crd_t", person, "k", [{"type": "message.post", "text": "x" * 1_000_000}]
        )
    assert large.value.code == "too_large"
    with pytest.raises(ChipsError) as bad:
        await client.send("ws_1", "crd_t", person, "", [{"type": "message.post"}])
    assert bad.value.code == "invalid_request" and "idempotency_key" in bad.value.message
    after = (await nc.jetstream().stream_info(NAMES.append_stream)).state.messages
    assert after == before
    # A request carries the fingerprint of what its client sent, and no answer in time is
    # the client's own error.
    with pytest.raises(ChipsError) as late:
        await client.append("ws_1", "crd_t", person, "k4", [{"type": "message.post", "text": "a"}])
    assert late.value.code == "unavailable" and "same key" in late.value.message
    msg = await nc.jetstream().get_msg(NAMES.append_stream, after + 1)
    assert msg.data is not None
    assert orjson.loads(msg.data)["fingerprint"]
    await client.stop()
