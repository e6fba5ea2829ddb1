"""What a new user meets first (issue 14): the README's curl, unknown paths, no token."""

from __future__ import annotations

import json

import websockets

from tests.e2e.client import Api, key


async def test_json_is_read_without_a_json_content_type(api: Api) -> None:
    owner = await api.create_workspace()
    room = await api.open_space(owner, "Curl")

    def body() -> str:
        event = {"type": "message.post", "space_id": room, "text": "Find the PO"}
        return json.dumps({**event, "idempotency_key": key()})

    # What `curl -d` sends: a form's Content-Type, and JSON in it.
    as_curl = await api.http.post(
        "/v1/events",
        content=body(),
        headers={**api.auth(owner), "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert as_curl.status_code == 200, as_curl.text
    assert as_curl.json()["duplicate"] is False
    # And no Content-Type at all.
    bare = await api.http.post("/v1/events", content=body().encode(), headers=api.auth(owner))
    assert bare.status_code == 200, bare.text


async def test_a_body_that_is_not_json_names_the_header(api: Api) -> None:
    owner = await api.create_workspace()
    r = await api.http.post(
        "/v1/events",
        content=b"type=message.post&text=hi",
        headers={**api.auth(owner), "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert r.status_code == 400
    assert r.json()["code"] == "invalid_request"
    assert "Content-Type: application/json" in r.json()["message"]


async def test_unknown_paths_and_methods_answer_code_and_message(api: Api) -> None:
    r = await api.http.get("/v1/nothing-here")
    assert r.status_code == 404
    assert r.json()["code"] == "not_found" and "/v1/nothing-here" in r.json()["message"]
    assert set(r.json()) == {"code", "message"}
    r = await api.http.delete("/v1/events")
    assert r.status_code in (404, 405)
    assert set(r.json()) == {"code", "message"} and r.json()["code"] in (
        "not_found",
        "invalid_request",
    )


async def test_a_socket_without_a_token_is_told_why_before_the_close(stack) -> None:
    url = stack.gateway_a.replace("http://", "ws://") + "/v1/ws"
    async with websockets.connect(url) as ws:
        frame = json.loads(await ws.recv())
        assert frame["frame"] == "error" and frame["code"] == "unauthorized"
        assert "Authorization: Bearer" in frame["message"]
        await ws.wait_closed()
        assert ws.close_code == 4401
