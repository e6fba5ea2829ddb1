"""Scope: a credential sees, replays, reads and writes only its own spaces.

docs/product/websocket.md, Subscribing and resuming and Writing: "A harness's token sees no space
its harness is not in"; "anyone writing into a space they are not a member of" gets
forbidden and no ack.
"""

from __future__ import annotations

from tests.e2e.client import Api, Socket


async def test_harness_never_receives_replays_or_reads_a_space_it_is_not_in(
    stack, api: Api
) -> None:
    owner = await api.create_workspace()
    harness, own_space = await api.connect_harness(owner, "Scout")
    other, other_space = await api.connect_harness(owner, "Ledger")
    secret_room = await api.open_space(owner, "Board only")

    live = await Socket.open(stack.gateway_b, harness)
    await live.subscribe(owner.workspace_id)
    await live.attached()
    hidden = [
        await api.say(owner, secret_room, "the secret plan"),
        await api.say(owner, other_space, "for Ledger only"),
    ]
    visible = await api.say(owner, own_space, "for Scout")
    # One socket is sent a workspace's events in seq order: once the later seq is here, a
    # hidden one would have come before it.
    await live.wait_for_seq(visible)
    assert not set(hidden) & set(live.seqs())

    replay = await Socket.open(stack.gateway_a, harness, accepts=["events"])
    await replay.subscribe(owner.workspace_id, since=0)
    await replay.wait_for_seq(visible)
    replayed = replay.events()
    assert not set(hidden) & {e["seq"] for e in replayed}
    assert all(e.get("space_id") in (None, own_space) for e in replayed)
    assert "the secret plan" not in str(replayed)

    read = await api.read(harness, since=0)
    assert {e["seq"] for e in read} == {e["seq"] for e in replayed}
    assert "the secret plan" not in str(read) and "for Ledger only" not in str(read)
    forbidden = await api.http.get(
        "/v1/events", params={"space_id": secret_room}, headers=api.auth(harness)
    )
    assert forbidden.status_code == 403 and forbidden.json()["code"] == "forbidden"
    assert other.participant_id not in str(live.hello_frame)
    await live.close()
    await replay.close()


async def test_a_write_into_a_space_it_is_not_in_is_forbidden_logs_nothing_and_gets_no_ack(
    stack, api: Api
) -> None:
    owner = await api.create_workspace()
    harness, _ = await api.connect_harness(owner, "Scout")
    secret_room = await api.open_space(owner, "Board only")
    head_before = [e["seq"] for e in await api.read(owner, since=0)][-1]

    sock = await Socket.open(stack.gateway_b, harness)
    k = await sock.write({"type": "message.post", "space_id": secret_room, "text": "let me in"})
    answer = await sock.answer(k)
    assert answer["frame"] == "error" and answer["code"] == "forbidden"
    assert answer["idempotency_key"] == k
    assert not any(f["frame"] == "ack" for f in sock.frames)

    over_http = await api.post_event(
        harness,
        {
            "type": "message.post",
            "space_id": secret_room,
            "text": "let me in",
            "idempotency_key": "x1",
        },
    )
    assert over_http.status_code == 403 and over_http.json()["code"] == "forbidden"
    events = await api.read(owner, since=0)
    assert events[-1]["seq"] == head_before
    assert "let me in" not in str(events)
    await sock.close()


async def test_a_credential_cannot_subscribe_to_another_workspace(stack, api: Api) -> None:
    owner = await api.create_workspace()
    stranger = await api.create_workspace(name="Elsewhere")
    sock = await Socket.open(stack.gateway_a, owner)
    await sock.subscribe(stranger.workspace_id, since=0)
    error = await sock.wait_for(lambda f: f["frame"] == "error")
    assert error["code"] == "forbidden"
    await sock.close()
