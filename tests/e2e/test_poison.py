"""Poison requests: a request that fails on every delivery is answered and set aside.

docs/adr/0025: the eventlog tries a failing request again alone, with a short backoff;
once its deliveries run out or it is older than the per-request cap, its writer is
answered ``internal`` and the request goes to the dead-letter stream, with why, for an
operator. Its neighbours are logged as if it had not been there.

The poison is an append request that a writer other than the gateway put on the append
stream, holding a NUL character in its text: the gateway refuses such an event, but the
eventlog takes what the stream holds, and Postgres refuses to store it on every try.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

import nats
import psycopg
from nats.js.errors import NotFoundError

from chips_common.ids import new_id
from chips_common.nats.streams import HDR_REPLY, Names
from tests.e2e.client import Api, Socket, key


def credential_of(stack, participant_id: str) -> str:
    url = stack.env["CHIPS_DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT id FROM credentials WHERE participant_id = %s", (participant_id,)
        ).fetchone()
    assert row is not None
    return str(row[0])


async def test_a_request_failing_every_delivery_is_answered_and_dead_lettered(
    stack, api: Api
) -> None:
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    watcher = await Socket.open(stack.gateway_b, harness)
    await watcher.subscribe(owner.workspace_id)
    await watcher.attached()
    writer = await Socket.open(stack.gateway_a, owner)

    nc = await nats.connect(stack.env["CHIPS_NATS_URL"])
    try:
        inbox = nc.new_inbox()
        answers = await nc.subscribe(inbox)
        poison = key("poison")
        request = {
            "request_id": new_id("req"),
            "workspace_id": owner.workspace_id,
            "credential_id": credential_of(stack, owner.participant_id),
            "actor": {"kind": "person", "id": owner.participant_id},
            "idempotency_key": poison,
            "events": [{"type": "message.post", "space_id": space_id, "text": "bad\x00"}],
        }
        await nc.jetstream().publish(
            Names("CHIPS", "chips").append_subject(owner.workspace_id),
            json.dumps(request).encode(),
            headers={HDR_REPLY: inbox},
        )
        # Two ordinary posts right behind it, into the same workspace.
        after_1, after_2 = key("after"), key("after")
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

        # The poison's writer is answered with an error of its own, not left waiting.
        answer = json.loads((await answers.next_msg(timeout=20)).data)
        assert answer["request_id"] == request["request_id"]
        assert answer["ok"] is False and answer["code"] == "internal", answer
        assert "operator" in answer["message"]

        # An operator finds it on the dead-letter stream, with why and how often it was tried.
        js = nc.jetstream()
        dead = None
        for _ in range(50):  # the answer goes out first, the dead letter a moment after
            with contextlib.suppress(NotFoundError):
                last = await js.get_last_msg("CHIPS_DEADLETTER", "chips.deadletter")
                if json.loads(last.data).get("request_id") == request["request_id"]:
                    dead = last
                    break
            await asyncio.sleep(0.1)
        assert dead is not None, "the request is on the dead-letter stream"
        assert json.loads(dead.data) == request
        assert dead.headers is not None
        assert int(dead.headers["Chips-Deliveries"]) > 1, "it was tried again before giving up"
        assert dead.headers["Chips-Dead-Reason"]
        assert dead.headers["Chips-Subject"].startswith("chips.append.")
    finally:
        await nc.close()

    # Nothing of it is in the log, and the workspace goes on.
    logged = [e for e in await api.read(owner, space_id=space_id) if e["type"] == "message.post"]
    assert [e["text"] for e in logged] == ["one", "two"]
    third = await api.say(owner, space_id, "three")
    await watcher.wait_for_seq(third)
    await writer.close()
    await watcher.close()
