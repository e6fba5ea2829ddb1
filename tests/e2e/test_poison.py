"""Poison requests: a request that fails on every delivery is answered and set aside.

docs/adr/0025: the eventlog tries a failing request again alone, with a short backoff;
once its deliveries run out or it is older than the per-request cap, its writer is
answered ``internal`` and the request goes to the dead-letter stream, with why, for an
operator. Its neighbours are logged as if it had not been there.

The poison here is a text holding a NUL character: the gateway takes it, and Postgres
refuses to store it in the log on every try. (If a NUL is one day refused at the door,
this test needs another request that fails every time.)
"""

from __future__ import annotations

import json

import nats

from tests.e2e.client import Api, Socket, key


async def test_a_request_failing_every_delivery_is_answered_and_dead_lettered(
    stack, api: Api
) -> None:
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    watcher = await Socket.open(stack.gateway_b, harness)
    await watcher.subscribe(owner.workspace_id)
    writer = await Socket.open(stack.gateway_a, owner)

    # Pipelined: the poison first, then two ordinary posts behind it in the same batch.
    poison, after_1, after_2 = key("poison"), key("after"), key("after")
    await writer.write({"type": "message.post", "space_id": space_id, "text": "bad\x00"}, poison)
    await writer.write({"type": "message.post", "space_id": space_id, "text": "one"}, after_1)
    await writer.write({"type": "message.post", "space_id": space_id, "text": "two"}, after_2)

    # The neighbours are logged, in the order sent, and reach the harness.
    first = await writer.answer(after_1)
    second = await writer.answer(after_2)
    assert first["frame"] == "ack" and second["frame"] == "ack", (first, second)
    assert first["seq"] < second["seq"]
    await watcher.wait_for_seq(second["seq"])
    said = [e["text"] for e in watcher.events() if e["type"] == "message.new"]
    assert said == ["one", "two"]

    # The poison is answered with an error of its own, not left to the gateway's timeout
    # (which would say `unavailable`, send it again).
    answer = await writer.answer(poison, timeout=15)
    assert answer["frame"] == "error" and answer["code"] == "internal", answer
    assert "operator" in answer["message"]

    # An operator finds it on the dead-letter stream, with why and how often it was tried.
    nc = await nats.connect(stack.env["CHIPS_NATS_URL"])
    try:
        dead = await nc.jetstream().get_last_msg("CHIPS_DEADLETTER", "chips.deadletter")
    finally:
        await nc.close()
    request = json.loads(dead.data)
    assert request["idempotency_key"] == poison
    assert request["workspace_id"] == owner.workspace_id
    assert dead.headers is not None
    assert int(dead.headers["Chips-Deliveries"]) > 1, "it was tried again before giving up"
    assert dead.headers["Chips-Dead-Reason"]

    # Nothing of it is in the log, and the workspace goes on.
    logged = [e for e in await api.read(owner, space_id=space_id) if e["type"] == "message.post"]
    assert [e["text"] for e in logged] == ["one", "two"]
    third = await api.say(owner, space_id, "three")
    await watcher.wait_for_seq(third)
    await writer.close()
    await watcher.close()


async def test_a_poison_request_over_http_is_answered_with_an_error(stack, api: Api) -> None:
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    r = await api.post_event(
        owner,
        {
            "type": "message.post",
            "space_id": space_id,
            "text": "nul\x00",
            "idempotency_key": key("poison"),
        },
    )
    assert r.status_code == 500, r.text
    body = r.json()
    assert body["code"] == "internal" and body["message"], body
    # The same words without the NUL are logged as usual.
    assert await api.say(owner, space_id, "nul") > 0
