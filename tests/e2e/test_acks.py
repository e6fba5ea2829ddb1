"""The ack of a write that creates something names what it created.

A client learns a new room's id, or its post's, from the answer to its write, over HTTP
and on the socket, and again from a duplicate's answer (docs/protocol.md, Writing).
"""

from __future__ import annotations

from tests.e2e.client import Api, Socket, key


async def test_an_ack_over_http_names_the_space_and_the_message_it_created(stack, api: Api) -> None:
    owner = await api.create_workspace()
    made = {"type": "space.created", "title": "Plans", "members": [], "idempotency_key": key()}
    r = await api.post_event(owner, made)
    assert r.status_code == 200, r.text
    space_id = r.json()["space_id"]
    [logged] = await api.read(owner, since=r.json()["seq"] - 1, limit=1)
    assert logged["type"] == "space.created" and logged["space_id"] == space_id
    again = await api.post_event(owner, made)
    assert again.json()["duplicate"] is True and again.json()["space_id"] == space_id

    post = {"type": "message.post", "space_id": space_id, "text": "hi", "idempotency_key": key()}
    said = (await api.post_event(owner, post)).json()
    [line] = await api.read(owner, since=said["seq"] - 1, limit=1)
    assert said["message_id"] == line["message_id"] and "space_id" not in said

    thread = {
        "type": "space.created",
        "kind": "thread",
        "parent_space_id": space_id,
        "root_message_id": said["message_id"],
        "idempotency_key": key(),
    }
    r = await api.post_event(owner, thread)
    assert r.status_code == 200, r.text
    opened = r.json()
    [logged] = await api.read(owner, since=opened["seq"] - 1, limit=1)
    assert opened["space_id"] == logged["space_id"] != space_id

    # A write that creates nothing names nothing.
    pin = {"type": "message.pinned", "message_id": said["message_id"], "idempotency_key": key()}
    r = await api.post_event(owner, {**pin, "space_id": space_id})
    assert r.status_code == 200, r.text
    assert not {"space_id", "message_id", "agent_id"} & set(r.json())


async def test_an_ack_on_the_socket_names_what_it_created(stack, api: Api) -> None:
    owner = await api.create_workspace()
    sock = await Socket.open(stack.gateway_a, owner)
    k = await sock.write({"type": "space.created", "title": "Live", "members": []})
    ack = await sock.answer(k)
    assert ack["frame"] == "ack" and ack["space_id"].startswith("spc_"), ack
    k = await sock.write({"type": "message.post", "space_id": ack["space_id"], "text": "hello"})
    said = await sock.answer(k)
    assert said["message_id"].startswith("msg_"), said
    [line] = await api.read(owner, since=said["seq"] - 1, limit=1)
    assert line["message_id"] == said["message_id"]
    await sock.close()
