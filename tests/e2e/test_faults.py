"""Faults: kill a service mid-load, restart it, and lose or repeat nothing acknowledged.

docs/architecture/design.md §10 (fault tests) and §2: the log of record is Postgres; a client
re-sends what was not answered and is told it was a duplicate (docs/product/websocket.md, Writing).
"""

from __future__ import annotations

import asyncio

from tests.e2e.client import Api, Socket


async def test_eventlog_killed_mid_load_loses_and_repeats_nothing(stack, api: Api) -> None:
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    watcher = await Socket.open(stack.gateway_b, harness)
    await watcher.subscribe(owner.workspace_id, since=0)
    writer = await Socket.open(stack.gateway_a, owner)
    texts = {f"load-{i}": f"message {i}" for i in range(300)}

    async def send_all() -> None:
        for k, text in texts.items():
            await writer.write({"type": "message.post", "space_id": space_id, "text": text}, k)
            await asyncio.sleep(0.003)

    sending = asyncio.create_task(send_all())
    await writer.wait_for(lambda f: f["frame"] == "ack" and f["idempotency_key"] == "load-60", 30)
    stack.kill("eventlog")  # SIGKILL: no chance to finish the batch in flight
    await sending
    stack.start("eventlog")
    stack.wait_ready("eventlog")

    # As a client should: re-send every event not yet acked, until each is answered.
    for _ in range(10):
        acked = {f["idempotency_key"] for f in writer.frames if f["frame"] == "ack"}
        missing = [k for k in texts if k not in acked]
        if not missing:
            break
        for k in missing:
            await writer.write({"type": "message.post", "space_id": space_id, "text": texts[k]}, k)
        await asyncio.sleep(2)
    acks = {f["idempotency_key"]: f["seq"] for f in writer.frames if f["frame"] == "ack"}
    assert set(acks) == set(texts), f"{len(set(texts) - set(acks))} events were never acked"

    logged = [e for e in await api.read(owner, space_id=space_id) if e["type"] == "message.post"]
    logged += [
        e
        for e in await api.read(owner, space_id=space_id, since=logged[-1]["seq"])
        if e["type"] == "message.post"
    ]
    by_text = {}
    for event in logged:
        by_text.setdefault(event["text"], []).append(event["seq"])
    assert all(len(seqs) == 1 for seqs in by_text.values()), "an event was logged twice"
    assert set(by_text) == set(texts.values())
    for k, seq in acks.items():
        assert by_text[texts[k]] == [seq], "every ack names the seq that was logged"

    last = max(acks.values())
    await watcher.wait_for_seq(last, timeout=30)
    seen = watcher.seqs()
    assert len(seen) == len(set(seen)) and seen == sorted(seen), "delivered once, in order"
    assert set(acks.values()) <= set(seen), "every acknowledged event reached the harness"
    await writer.close()
    await watcher.close()


async def test_a_gateway_restart_loses_no_event_for_a_client_that_resumes(stack, api: Api) -> None:
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    bot = await Socket.open(stack.gateway_b, harness)
    await bot.subscribe(owner.workspace_id, since=0)
    first = await api.say(owner, space_id, "before")
    await bot.wait_for_seq(first)
    stack.restart("gateway_b")
    await bot.wait_closed()
    during = [await api.say(owner, space_id, f"while away {i}") for i in range(10)]
    again = await Socket.open(stack.gateway_b, harness)
    await again.subscribe(owner.workspace_id, since=bot.seqs()[-1])
    await again.wait_for_seq(during[-1])
    assert again.seqs() == during
    await again.close()
