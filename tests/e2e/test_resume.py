"""Resuming with since: exactly the missed events, once, in order.

docs/product/websocket.md, Subscribing and resuming; docs/architecture/design.md §4.
"""

from __future__ import annotations

import asyncio

from tests.e2e.client import Api, Socket


async def test_reconnect_with_since_gets_exactly_the_missed_events(stack, api: Api) -> None:
    """A client that reconnects with the last seq it saw receives what it missed, once."""
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    bot = await Socket.open(stack.gateway_b, harness)
    await bot.subscribe(owner.workspace_id, since=0)
    first = await api.say(owner, space_id, "one")
    await bot.wait_for_seq(first)
    last_seen = bot.seqs()[-1]
    await bot.close()

    missed = [await api.say(owner, space_id, f"missed {i}") for i in range(25)]
    again = await Socket.open(stack.gateway_a, harness)
    await again.subscribe(owner.workspace_id, since=last_seen)
    await again.wait_for_seq(missed[-1])
    assert again.seqs() == missed
    assert [e["text"] for e in again.events()] == [f"missed {i}" for i in range(25)]
    await again.close()


async def test_resume_while_another_client_appends_during_the_replay(stack, api: Api) -> None:
    """Events appended while the replay runs are delivered too: no gap, no repeat."""
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    history = [await api.say(owner, space_id, f"old {i}") for i in range(5)]
    writer = await Socket.open(stack.gateway_a, owner)
    # A long history makes the replay take a while; fill it over the socket (pipelined).
    keys = [
        await writer.write({"type": "message.post", "space_id": space_id, "text": f"bulk {i}"})
        for i in range(1500)
    ]
    last_bulk = await writer.answer(keys[-1], timeout=60)
    assert last_bulk["frame"] == "ack"

    async def keep_writing() -> list[str]:
        written = []
        for i in range(100):
            written.append(
                await writer.write(
                    {"type": "message.post", "space_id": space_id, "text": f"during {i}"}
                )
            )
            await asyncio.sleep(0.002)
        return written

    reader = await Socket.open(stack.gateway_b, harness, accepts=["events"])
    during_task = asyncio.create_task(keep_writing())
    await reader.subscribe(owner.workspace_id, since=history[0])
    during_keys = await during_task
    final = await writer.answer(during_keys[-1], timeout=30)
    await reader.wait_for_seq(final["seq"], timeout=60)

    seqs = reader.seqs()
    assert seqs == list(range(history[0] + 1, final["seq"] + 1))
    assert any(f["frame"] == "events" for f in reader.frames), "the replay came batched"
    assert all(len(f["events"]) <= 500 for f in reader.frames if f["frame"] == "events")
    await reader.close()
    await writer.close()


async def test_without_since_the_stream_starts_from_now(stack, api: Api) -> None:
    """Without since, nothing of the past is replayed; what follows is delivered."""
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    await api.say(owner, space_id, "in the past")
    bot = await Socket.open(stack.gateway_b, harness)
    await bot.subscribe(owner.workspace_id)
    await bot.attached()
    now = await api.say(owner, space_id, "now")
    await bot.wait_for_seq(now)
    assert bot.seqs() == [now]
    await bot.close()


async def test_without_since_posts_sent_right_after_the_subscribe_are_delivered(
    stack, api: Api
) -> None:
    """From now is when the subscribe is read: posts another socket sends right after it
    (not waiting for the subscription to be in place) reach the harness, in a room with a
    long history (bench/fastpath.py's seen figure, after its seq figure's 500 posts)."""
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    # The writer on the harness's gateway: the order in which one gateway reads two
    # sockets' frames is an order; two gateways' reads have none between them.
    writer = await Socket.open(stack.gateway_b, owner)
    keys = [
        await writer.write({"type": "message.post", "space_id": space_id, "text": f"old {i}"})
        for i in range(500)
    ]
    assert (await writer.answer(keys[-1], timeout=60))["frame"] == "ack"
    # Gateway B has no feed of this workspace yet: the subscribe opens one.
    bot = await Socket.open(stack.gateway_b, harness)
    await bot.subscribe(owner.workspace_id)
    texts = [f"new {i}" for i in range(20)]
    sent = [
        await writer.write({"type": "message.post", "space_id": space_id, "text": text})
        for text in texts
    ]
    assert (await writer.answer(sent[-1], timeout=60))["frame"] == "ack"
    for text in texts:
        await bot.wait_for(
            lambda f, text=text: any(
                e["type"] == "message.new" and e.get("text") == text
                for e in ([f["event"]] if f["frame"] == "event" else f.get("events", []))
            ),
            timeout=60,
        )
    assert not any(e.get("text", "").startswith("old ") for e in bot.events())
    await bot.close()
    await writer.close()


async def test_replay_without_accepts_is_one_frame_per_event(stack, api: Api) -> None:
    """docs/product/websocket.md, Subscribing and resuming: a client that says nothing is sent one
    frame per event."""
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    seqs = [await api.say(owner, space_id, f"m{i}") for i in range(5)]
    bot = await Socket.open(stack.gateway_b, harness)
    await bot.subscribe(owner.workspace_id, since=0)
    await bot.wait_for_seq(seqs[-1])
    assert not any(f["frame"] == "events" for f in bot.frames)
    assert bot.seqs()[-5:] == seqs
    await bot.close()
