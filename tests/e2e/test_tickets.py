"""Socket tickets and the ways onto /v1/ws (docs/product/websocket.md, Getting on)."""

from __future__ import annotations

import asyncio

from tests.e2e.client import Api, Socket


async def test_a_ticket_opens_the_socket_once(stack, api: Api) -> None:
    owner = await api.create_workspace()
    harness, _ = await api.connect_harness(owner, "Scout")
    r = await api.http.post("/v1/socket-tickets", headers=api.auth(harness))
    assert r.status_code == 201 and r.json()["expires_in"] == 30
    ticket = r.json()["ticket"]
    first = await Socket.open(stack.gateway_b, query=f"?ticket={ticket}")
    assert first.hello_frame and first.hello_frame["harness"]["id"] == harness.participant_id
    second = await Socket.open(stack.gateway_a, query=f"?ticket={ticket}", hello=False)
    refused = await second.wait_for(lambda f: f["frame"] == "error")
    assert refused["code"] == "unauthorized"
    await second.wait_closed()
    await first.close()


async def test_an_expired_ticket_is_refused(stack, api_b: Api) -> None:
    """Gateway B runs with a two-second ticket TTL (set by the harness)."""
    owner = await api_b.create_workspace()
    harness, _ = await api_b.connect_harness(owner, "Scout")
    ticket = await api_b.ticket(harness)
    await asyncio.sleep(3)
    sock = await Socket.open(stack.gateway_b, query=f"?ticket={ticket}", hello=False)
    refused = await sock.wait_for(lambda f: f["frame"] == "error")
    assert refused["code"] == "unauthorized"


async def test_a_token_in_the_url_still_works_and_is_logged_as_deprecated(stack, api: Api) -> None:
    owner = await api.create_workspace()
    harness, _ = await api.connect_harness(owner, "Scout")
    sock = await Socket.open(stack.gateway_a, query=f"?token={harness.token}")
    assert sock.hello_frame and sock.hello_frame["harness"]["id"] == harness.participant_id
    await sock.close()
    log = stack.procs["gateway_a"].tail(400)
    assert "?token=" in log, "each use of a token in the URL is logged as a warning"
    assert harness.token not in log, "tokens never appear in logs"


async def test_an_unknown_token_is_refused(stack) -> None:
    from tests.e2e.client import Identity

    nobody = Identity("ws_x", "usr_x", "chips_pt_nonsense")
    sock = await Socket.open(stack.gateway_a, nobody, hello=False)
    refused = await sock.wait_for(lambda f: f["frame"] == "error")
    assert refused["code"] == "unauthorized"
