"""Acks written together (chips_common.nats.connect.Client.ack_all) are acks: on a
nats-server of the module's own, a pull consumer's messages acked at once are never
handed out again, and one acked twice, or a message that is not JetStream's, is refused
as ``Msg.ack`` refuses it."""

from __future__ import annotations

import asyncio

import pytest
from nats.errors import MsgAlreadyAckdError, NotJSMessageError
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig

from chips_common.nats.connect import Client, ack_all


async def connected(url: str) -> Client:
    nc = Client()
    await nc.connect(url)
    return nc


async def test_messages_acked_together_are_not_handed_out_again(own_nats: str) -> None:
    nc = await connected(own_nats)
    try:
        js = nc.jetstream()
        await js.add_stream(StreamConfig(name="ACKALL", subjects=["ackall.>"]))
        for i in range(50):
            await js.publish(f"ackall.{i % 3}", str(i).encode())
        await js.add_consumer(
            "ACKALL", ConsumerConfig(durable_name="all", ack_policy=AckPolicy.EXPLICIT, ack_wait=1)
        )
        sub = await js.pull_subscribe_bind("all", "ACKALL")
        msgs = await sub.fetch(50, timeout=5)
        assert len(msgs) == 50
        await ack_all(msgs[:30])
        await nc.flush()
        with pytest.raises(MsgAlreadyAckdError):
            await nc.ack_all(msgs[:1])
        info = await js.consumer_info("ACKALL", "all")
        assert info.num_ack_pending == 20
        # Past the ack wait (a second), only the 20 not acked come again: the pull waits
        # out its five seconds for more.
        again = await sub.fetch(50, timeout=5)
        assert sorted(int(m.data) for m in again) == sorted(int(m.data) for m in msgs[30:])
        await nc.ack_all(again)
        await nc.flush()
        info = await js.consumer_info("ACKALL", "all")
        assert info.num_ack_pending == 0 and info.num_pending == 0
        await js.delete_stream("ACKALL")
    finally:
        await nc.close()


async def test_a_message_with_no_reply_is_not_acked(own_nats: str) -> None:
    nc = await connected(own_nats)
    try:
        got: asyncio.Queue = asyncio.Queue()
        await nc.subscribe("plain.one", cb=got.put)
        await nc.publish("plain.one", b"x")
        msg = await asyncio.wait_for(got.get(), 5)
        with pytest.raises(NotJSMessageError):
            await nc.ack_all([msg])
    finally:
        await nc.close()
