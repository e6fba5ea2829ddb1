"""Idempotency keys: scoped per credential, durable across restarts.

spec/websocket.md, Writing; DESIGN.md §2, Idempotency.
"""

from __future__ import annotations

from tests.e2e.client import Api, Socket, key


async def test_same_key_twice_is_a_duplicate_with_the_same_seq(stack, api: Api) -> None:
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    sock = await Socket.open(stack.gateway_a, owner)
    event = {"type": "message.post", "space_id": space_id, "text": "once"}
    k = key("dup")
    await sock.write(event, k)
    first = await sock.answer(k)
    sock.frames.clear()
    await sock.write(event, k)
    second = await sock.answer(k)
    assert first["duplicate"] is False and second["duplicate"] is True
    assert first["seq"] == second["seq"]
    texts = [e for e in await api.read(owner, space_id=space_id) if e.get("text") == "once"]
    assert len(texts) == 1
    await sock.close()


async def test_duplicate_over_http_and_socket_is_the_same_promise(stack, api: Api) -> None:
    """The key is the credential's, whichever way the event travels."""
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    event = {"type": "message.post", "space_id": space_id, "text": "hi", "idempotency_key": "same"}
    r1 = await api.post_event(owner, event)
    sock = await Socket.open(stack.gateway_b, owner)
    await sock.write({k: v for k, v in event.items() if k != "idempotency_key"}, "same")
    ack = await sock.answer("same")
    assert ack["duplicate"] is True and ack["seq"] == r1.json()["seq"]
    await sock.close()


async def test_duplicate_is_recognised_after_the_eventlog_restarts(stack, api: Api) -> None:
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    event = {
        "type": "message.post",
        "space_id": space_id,
        "text": "durable",
        "idempotency_key": "k-restart",
    }
    first = (await api.post_event(owner, event)).json()
    stack.restart("eventlog")
    again = await api.post_event(owner, event)
    assert again.status_code == 200, again.text
    repeated = {k: v for k, v in again.json().items() if k != "trace_id"}
    assert repeated == {**{k: v for k, v in first.items() if k != "trace_id"}, "duplicate": True}


async def test_the_same_key_from_another_credential_is_a_different_event(stack, api: Api) -> None:
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    mine = await api.post_event(
        owner,
        {
            "type": "message.post",
            "space_id": space_id,
            "text": "from the person",
            "idempotency_key": "hello-1",
        },
    )
    theirs = await api.post_event(
        harness,
        {
            "type": "message.post",
            "space_id": space_id,
            "text": "from the harness",
            "idempotency_key": "hello-1",
        },
    )
    assert mine.json()["duplicate"] is False and theirs.json()["duplicate"] is False
    assert mine.json()["seq"] != theirs.json()["seq"]
    texts = [
        e["text"] for e in await api.read(owner, space_id=space_id) if e["type"] == "message.post"
    ]
    assert texts == ["from the person", "from the harness"]


async def test_seqs_are_gap_free_and_increasing_across_gateways(
    stack, api: Api, api_b: Api
) -> None:
    """DESIGN.md §2: seq is per workspace, gap-free, strictly increasing."""
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    a = await Socket.open(stack.gateway_a, owner)
    b = await Socket.open(stack.gateway_b, owner)
    keys = []
    for i in range(100):
        keys.append(
            (a, await a.write({"type": "message.post", "space_id": space_id, "text": f"a{i}"}))
        )
        keys.append(
            (b, await b.write({"type": "message.post", "space_id": space_id, "text": f"b{i}"}))
        )
    seqs = sorted([(await s.answer(k, timeout=30))["seq"] for s, k in keys])
    assert seqs == list(range(seqs[0], seqs[0] + 200))
    events = await api.read(owner, since=0)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    await a.close()
    await b.close()


async def test_a_repeated_idempotency_key_on_a_creating_call_creates_nothing_more(
    stack, api: Api
) -> None:
    """A retried create is safe: nothing is created twice, and no second token is shown."""
    headers = {"X-Chips-Operator-Secret": "chips-dev-operator-secret", "Idempotency-Key": key("ws")}
    body = {"name": "Once", "owner_name": "Arjun"}
    first = await api.http.post("/v1/workspaces", json=body, headers=headers)
    again = await api.http.post("/v1/workspaces", json=body, headers=headers)
    assert first.status_code == 201
    assert again.status_code == 400 and again.json()["code"] == "invalid_request"
    assert again.json()["workspace_id"] == first.json()["workspace_id"]
    assert again.json()["participant_id"] == first.json()["owner_id"]
    assert "token" not in again.json()

    owner_token = first.json()["token"]
    person_headers = {"Authorization": f"Bearer {owner_token}", "Idempotency-Key": "add-maya"}
    made = await api.http.post("/v1/participants", json={"name": "Maya"}, headers=person_headers)
    retried = await api.http.post("/v1/participants", json={"name": "Maya"}, headers=person_headers)
    assert made.status_code == 201 and retried.status_code == 400
    assert retried.json()["participant_id"] == made.json()["participant_id"]
    r = await api.http.get(
        "/v1/events", params={"since": 0}, headers={"Authorization": f"Bearer {owner_token}"}
    )
    joined = [e for e in r.json()["events"] if e["type"] == "participant.joined"]
    assert [e["name"] for e in joined] == ["Arjun", "Maya"]
