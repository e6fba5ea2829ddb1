"""The handshake, frames and errors (docs/product/websocket.md: The handshake, Writing)."""

from __future__ import annotations

from tests.e2e.client import Api, Socket


async def test_no_protocol_version_in_common_is_refused_and_closed(stack, api: Api) -> None:
    """The server picks the highest version both speak, or refuses and closes."""
    owner = await api.create_workspace()
    sock = await Socket.open(stack.gateway_a, owner, protocol=(2, 3))
    assert sock.hello_frame is not None and sock.hello_frame["frame"] == "error"
    assert sock.hello_frame["code"] == "invalid_frame"
    await sock.wait_closed()


async def test_an_overlapping_range_picks_the_highest_shared_version(stack, api: Api) -> None:
    owner = await api.create_workspace()
    sock = await Socket.open(stack.gateway_a, owner, protocol=(1, 5))
    assert sock.hello_frame and sock.hello_frame["protocol"]["version"] == 1
    await sock.close()


async def test_a_key_beside_the_event_is_invalid_frame_and_nothing_is_logged(
    stack, api: Api
) -> None:
    """A key beside event rather than in it is not read: invalid_frame."""
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    head = (await api.read(owner))[-1]["seq"]
    sock = await Socket.open(stack.gateway_a, owner)
    await sock.send(
        {
            "frame": "event",
            "idempotency_key": "beside",
            "event": {"type": "message.post", "space_id": space_id, "text": "hi"},
        }
    )
    error = await sock.wait_for(lambda f: f["frame"] == "error")
    assert error["code"] == "invalid_frame" and error["idempotency_key"] == "beside"
    # The socket's next event is logged right after the head: nothing came between.
    k = await sock.write({"type": "message.post", "space_id": space_id, "text": "after"})
    assert (await sock.answer(k))["seq"] == head + 1
    assert [e["text"] for e in await api.read(owner, since=head)] == ["after"]
    await sock.close()


async def test_bad_events_are_invalid_event_naming_the_field(stack, api: Api) -> None:
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    sock = await Socket.open(stack.gateway_b, owner)
    cases = {
        "type": {"type": "message.teleport", "space_id": space_id},
        "text": {"type": "message.post", "space_id": space_id},
        "colour": {"type": "message.post", "space_id": space_id, "text": "x", "colour": "red"},
        "seq": {"type": "message.post", "space_id": space_id, "text": "x", "seq": 4},
    }
    for field, event in cases.items():
        k = await sock.write(event)
        error = await sock.answer(k)
        assert error["frame"] == "error" and error["code"] == "invalid_event", error
        assert error["field"] == field and field in error["message"]
    k = await sock.write({"type": "workspace.created", "name": "mine now"})
    assert (await sock.answer(k))["code"] == "forbidden"
    await sock.close()


async def test_frames_before_hello_and_unknown_frames_are_invalid_frame(stack, api: Api) -> None:
    owner = await api.create_workspace()
    sock = await Socket.open(stack.gateway_a, owner, hello=False)
    await sock.send({"frame": "subscribe", "workspace_id": owner.workspace_id})
    assert (await sock.wait_for(lambda f: f["frame"] == "error"))["code"] == "invalid_frame"
    sock.frames.clear()
    await sock.conn.send("not json")
    assert (await sock.wait_for(lambda f: f["frame"] == "error"))["code"] == "invalid_frame"
    await sock.close()


async def test_http_errors_are_a_code_and_a_sentence(stack, api: Api) -> None:
    r = await api.http.get("/v1/events")
    assert r.status_code == 401 and r.json()["code"] == "unauthorized" and r.json()["message"]
    owner = await api.create_workspace()
    r = await api.http.get("/v1/events", params={"limit": "lots"}, headers=api.auth(owner))
    assert r.status_code == 400 and r.json()["code"] == "invalid_request"
    r = await api.post_event(owner, {"type": "message.post", "text": "no key"})
    assert r.status_code == 400 and r.json()["code"] == "invalid_frame"
    r = await api.http.post(
        "/v1/workspaces",
        json={"name": "x", "owner_name": "y"},
        headers={"X-Chips-Operator-Secret": "wrong"},
    )
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"


async def test_only_an_owner_or_admin_adds_people(stack, api: Api) -> None:
    owner = await api.create_workspace()
    member = await api.add_person(owner, "Maya Chen")
    r = await api.http.post("/v1/participants", json={"name": "Sneaky"}, headers=api.auth(member))
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    admin = await api.add_person(owner, "Ravi", role="admin")
    await api.add_person(admin, "Lee")
