"""Idempotency keys: scoped per credential, durable across restarts.

docs/product/websocket.md, Writing; docs/architecture/design.md §2, Idempotency.
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
    # The first request's fingerprint was kept with its key, in the table too.
    other = await api.post_event(owner, {**event, "text": "another"})
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
    assert other.json()["seq"] == first["seq"]


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
    """docs/architecture/design.md §2: seq is per workspace, gap-free, strictly increasing."""
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
    assert again.status_code == 409 and again.json()["code"] == "already_created"
    assert again.json()["workspace_id"] == first.json()["workspace_id"]
    assert again.json()["participant_id"] == first.json()["owner_id"]
    assert "token" not in again.json()

    owner_token = first.json()["token"]
    person_headers = {"Authorization": f"Bearer {owner_token}", "Idempotency-Key": "add-maya"}
    made = await api.http.post("/v1/participants", json={"name": "Maya"}, headers=person_headers)
    retried = await api.http.post("/v1/participants", json={"name": "Maya"}, headers=person_headers)
    assert made.status_code == 201 and retried.status_code == 409
    assert retried.json()["participant_id"] == made.json()["participant_id"]
    r = await api.http.get(
        "/v1/events", params={"since": 0}, headers={"Authorization": f"Bearer {owner_token}"}
    )
    joined = [e for e in r.json()["events"] if e["type"] == "participant.joined"]
    assert [e["name"] for e in joined] == ["Arjun", "Maya"]


# --- a used key with another request (docs/adr/0126) ---------------------------------


async def test_a_used_key_with_another_request_is_refused_over_http(stack, api: Api) -> None:
    """Another body, type or room under a used key is refused 422, naming the first seq;
    the first request sent again is still a duplicate with its answer."""
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    other = await api.open_space(owner, "Other")
    k = key("reuse")
    event = {"type": "message.post", "space_id": space_id, "text": "first", "idempotency_key": k}
    first = await api.post_event(owner, event)
    assert first.status_code == 200, first.text
    seq = first.json()["seq"]
    for changed in (
        {**event, "text": "second"},  # another body
        {**event, "space_id": other},  # another room
        {"type": "space.updated", "space_id": space_id, "title": "Renamed", "idempotency_key": k},
    ):
        r = await api.post_event(owner, changed)
        assert r.status_code == 422, r.text
        body = r.json()
        assert body["code"] == "idempotency_key_reused" and body["seq"] == seq, body
        assert body["idempotency_key"] == k and body["message"]
    again = await api.post_event(owner, event)
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert again.json()["seq"] == seq
    posts = [e for e in await api.read(owner, space_id=space_id) if e["type"] == "message.post"]
    assert [e["text"] for e in posts] == ["first"]
    sheet = await api.http.get(f"/v1/spaces/{space_id}", headers=api.auth(owner))
    assert sheet.json()["title"] == "Scout"


async def test_a_used_key_with_another_request_is_refused_on_the_socket(stack, api: Api) -> None:
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    sock = await Socket.open(stack.gateway_a, owner)
    k = key("reuse")
    event = {"type": "message.post", "space_id": space_id, "text": "first"}
    await sock.write(event, k)
    first = await sock.answer(k)
    assert first["frame"] == "ack", first
    sock.frames.clear()
    await sock.write({**event, "text": "other words"}, k)
    refused = await sock.answer(k)
    assert refused["frame"] == "error" and refused["code"] == "idempotency_key_reused", refused
    assert refused["seq"] == first["seq"]
    sock.frames.clear()
    await sock.write(event, k)
    again = await sock.answer(k)
    assert again["frame"] == "ack" and again["duplicate"] is True
    assert again["seq"] == first["seq"]
    await sock.close()


async def test_a_used_key_on_a_route_with_another_body_is_refused(stack, api: Api) -> None:
    """A rename sent under a used Idempotency-Key does not 'succeed' doing nothing."""
    owner = await api.create_workspace()
    space_id = await api.open_space(owner, "Plans")
    headers = {**api.auth(owner), "Idempotency-Key": key("rename")}
    first = await api.http.patch(f"/v1/spaces/{space_id}", json={"title": "A"}, headers=headers)
    assert first.status_code == 200, first.text
    r = await api.http.patch(f"/v1/spaces/{space_id}", json={"title": "B"}, headers=headers)
    assert r.status_code == 422 and r.json()["code"] == "idempotency_key_reused", r.text
    assert r.json()["seq"] == first.json()["seq"]
    same = await api.http.patch(f"/v1/spaces/{space_id}", json={"title": "A"}, headers=headers)
    assert same.status_code == 200 and same.json()["duplicate"] is True
    sheet = await api.http.get(f"/v1/spaces/{space_id}", headers=api.auth(owner))
    assert sheet.json()["title"] == "A"

    # A creating call: the same body is the duplicate (tested above), another is refused.
    ws_headers = {"X-Chips-Operator-Secret": "chips-dev-operator-secret", "Idempotency-Key": key()}
    made = await api.http.post(
        "/v1/workspaces", json={"name": "One", "owner_name": "Ana"}, headers=ws_headers
    )
    assert made.status_code == 201, made.text
    other = await api.http.post(
        "/v1/workspaces", json={"name": "Two", "owner_name": "Ana"}, headers=ws_headers
    )
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"


async def test_an_empty_or_null_key_is_refused(stack, api: Api) -> None:
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    event = {"type": "message.post", "space_id": space_id, "text": "keyless"}
    for bad in ("", None):
        r = await api.post_event(owner, {**event, "idempotency_key": bad})
        assert r.status_code == 400 and r.json()["code"] == "invalid_frame", r.text
    r = await api.http.patch(
        f"/v1/spaces/{space_id}",
        json={"title": "x"},
        headers={**api.auth(owner), "Idempotency-Key": ""},
    )
    assert r.status_code == 400 and r.json()["code"] == "invalid_request", r.text
    sock = await Socket.open(stack.gateway_a, owner)
    for bad in ("", None):
        await sock.send({"frame": "event", "event": {**event, "idempotency_key": bad}})
        refused = await sock.wait_for(lambda f: f["frame"] == "error")
        assert refused["code"] == "invalid_frame"
        sock.frames.clear()
    posts = [e for e in await api.read(owner, space_id=space_id) if e["type"] == "message.post"]
    assert posts == []
    await sock.close()
