"""Restarts (docs/product/websocket.md, Restarts; docs/adr/0080).

A harness that declared ``restarts`` is restarted by its owner or a workspace owner or
admin: the ``restart`` frame goes down each of its sockets, on every gateway, that said
``restart`` in its hello's ``accepts``; it reads "Restarting" for everybody until its next
word (a socket that opens, or ``PUT /v1/harnesses/:id/status``), and once the wait is over
Chips says what is true. A harness that cannot be asked is refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from chips_devstack.stack import Stack
from tests.e2e.client import Api, Identity, Socket

QUICK = "gateway_quick_restart"
WAIT_SECONDS = 2


@pytest.fixture(scope="module")
def quick(stack: Stack) -> Iterator[str]:
    """A gateway whose restart wait is two seconds rather than three minutes."""
    stack.extra_env[QUICK] = {"CHIPS_RESTART_WAIT_SECONDS": str(WAIT_SECONDS)}
    stack.start(QUICK)
    stack.wait_ready(QUICK)
    yield stack.url(QUICK)
    stack.stop(QUICK)


async def restartable(api: Api, owner: Identity, name: str = "Scout") -> Identity:
    harness, _ = await api.connect_harness(owner, name)
    r = await api.http.put(
        f"/v1/harnesses/{harness.participant_id}/capabilities",
        json={"capabilities": ["restarts"]},
        headers=api.auth(owner),
    )
    assert r.status_code == 200, r.text
    return harness


async def face(api: Api, who: Identity, harness: Identity) -> dict[str, Any]:
    r = await api.http.get("/v1/participants", headers=api.auth(who))
    assert r.status_code == 200, r.text
    return next(
        p for p in r.json()["participants"] if p["participant_id"] == harness.participant_id
    )


async def ask(api: Api, who: Identity, harness: Identity) -> Any:
    return await api.http.post(
        f"/v1/harnesses/{harness.participant_id}/restart", headers=api.auth(who)
    )


def restarts(sock: Socket) -> list[dict[str, Any]]:
    return [f for f in sock.frames if f["frame"] == "restart"]


async def test_the_frame_goes_to_each_socket_that_accepts_it_on_every_gateway(
    stack: Stack, api: Api
) -> None:
    owner = await api.create_workspace()
    scout = await restartable(api, owner)
    on_a = await Socket.open(stack.gateway_a, scout, accepts=["restart"])
    on_b = await Socket.open(stack.gateway_b, scout, accepts=["events", "restart"])
    deaf = await Socket.open(stack.gateway_a, scout, accepts=["events"])
    assert (await face(api, owner, scout))["status"] == "connected"

    r = await ask(api, owner, scout)
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["sockets"] == 2 and body["status"] == "restarting"
    for sock in (on_a, on_b):
        frame = await sock.wait_for(lambda f: f["frame"] == "restart")
        assert frame == {
            "frame": "restart",
            "asked_by": owner.participant_id,
            "asked_at": body["asked_at"],
        }
    # The deaf socket's gateway handed out the frames of one notice at once: whatever the
    # deaf socket is sent after on_a had its frame comes after any frame it was handed.
    ticket = await deaf.write({"type": "bogus.type"})
    await deaf.answer(ticket)
    assert restarts(deaf) == []

    shown = await face(api, owner, scout)
    assert shown["status"] == "restarting"
    assert shown["restart_asked_at"] == body["asked_at"]
    # Everybody reads it, not only who asked.
    maya = await api.add_person(owner, "Maya Chen")
    assert (await face(api, maya, scout))["status"] == "restarting"
    for sock in (on_a, on_b, deaf):
        await sock.close()


async def test_restarting_until_a_socket_opens(stack: Stack, api: Api) -> None:
    owner = await api.create_workspace()
    scout = await restartable(api, owner)
    old = await Socket.open(stack.gateway_a, scout, accepts=["restart"])
    assert (await ask(api, owner, scout)).status_code == 202
    await old.wait_for(lambda f: f["frame"] == "restart")
    await old.close()
    assert (await face(api, owner, scout))["status"] == "restarting"
    # The process restarted itself and reconnects (on the other gateway): its next word.
    new = await Socket.open(stack.gateway_b, scout, accepts=["restart"])
    shown = await face(api, owner, scout)
    assert shown["status"] == "connected" and "restart_asked_at" not in shown
    # The frame is sent now or never: the new socket never hears it.
    await new.subscribe(owner.workspace_id, since=0)
    await new.attached()
    assert restarts(new) == []
    await new.close()


async def test_restarting_until_the_harness_reports_its_status(stack: Stack, api: Api) -> None:
    owner = await api.create_workspace()
    bridge = await restartable(api, owner, "Bridge")
    sock = await Socket.open(stack.gateway_a, bridge, accepts=["restart"])
    assert (await ask(api, owner, bridge)).status_code == 202
    await sock.wait_for(lambda f: f["frame"] == "restart")
    assert (await face(api, owner, bridge))["status"] == "restarting"

    url = f"/v1/harnesses/{bridge.participant_id}/status"
    r = await api.http.put(url, json={"status": "trouble"}, headers=api.auth(bridge))
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "trouble"
    assert (await face(api, owner, bridge))["status"] == "trouble"
    r = await api.http.put(url, json={"status": "ok"}, headers=api.auth(bridge))
    assert r.json()["status"] == "connected"
    assert (await face(api, owner, bridge))["status"] == "connected"

    # Only the harness itself reports, and only ok or trouble.
    r = await api.http.put(url, json={"status": "ok"}, headers=api.auth(owner))
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    r = await api.http.put(url, json={"status": "fine"}, headers=api.auth(bridge))
    assert r.status_code == 400 and r.json()["code"] == "invalid_request"
    await sock.close()


async def waited_out(api: Api, owner: Identity, harness: Identity) -> dict[str, Any]:
    """The harness's face once Chips stopped waiting for it (bounded)."""
    deadline = asyncio.get_running_loop().time() + WAIT_SECONDS + 15
    while True:
        shown = await face(api, owner, harness)
        if shown["status"] != "restarting":
            return shown
        assert asyncio.get_running_loop().time() < deadline, "still restarting"
        await asyncio.sleep(0.25)


async def test_after_the_wait_chips_says_what_is_true(stack: Stack, quick: str) -> None:
    api = Api(quick)
    try:
        owner = await api.create_workspace()
        # One that never came back: nothing of it is connected.
        gone = await restartable(api, owner, "Gone")
        sock = await Socket.open(quick, gone, accepts=["restart"])
        assert (await ask(api, owner, gone)).status_code == 202
        await sock.wait_for(lambda f: f["frame"] == "restart")
        await sock.close()
        # One that heard it, and stayed connected without a word.
        stayed = await restartable(api, owner, "Stayed")
        kept = await Socket.open(quick, stayed, accepts=["restart"])
        assert (await ask(api, owner, stayed)).status_code == 202
        await kept.wait_for(lambda f: f["frame"] == "restart")
        assert (await face(api, owner, stayed))["status"] == "restarting"

        assert (await waited_out(api, owner, gone))["status"] == "disconnected"
        assert (await waited_out(api, owner, stayed))["status"] == "connected"
        await kept.close()
    finally:
        await api.close()


async def test_a_harness_that_cannot_be_asked_is_refused(stack: Stack, api: Api) -> None:
    owner = await api.create_workspace()
    maya = await api.add_person(owner, "Maya Chen", role="admin")
    olga = await api.add_person(owner, "Olga Other")

    # Never declared restarts: refused, connected or not.
    plain, _ = await api.connect_harness(owner, "Plain")
    sock = await Socket.open(stack.gateway_a, plain, accepts=["restart"])
    r = await ask(api, owner, plain)
    assert r.status_code == 400 and r.json()["code"] == "invalid_request", r.text
    assert "restarts" in r.json()["message"]
    assert restarts(sock) == []
    await sock.close()

    # Declared, with nothing connected: nobody to ask.
    scout = await restartable(api, owner)
    r = await ask(api, owner, scout)
    assert r.status_code == 409 and r.json()["code"] == "not_connected", r.text
    assert (await face(api, owner, scout))["status"] == "disconnected"

    # Connected, but by no socket that takes a restart: the same.
    deaf = await Socket.open(stack.gateway_b, scout, accepts=["events"])
    r = await ask(api, owner, scout)
    assert r.status_code == 409 and r.json()["code"] == "not_connected", r.text
    assert (await face(api, owner, scout))["status"] == "connected"

    # Only its owner, or an owner or admin of the workspace, asks.
    listening = await Socket.open(stack.gateway_a, scout, accepts=["restart"])
    for who in (olga, scout):
        r = await ask(api, who, scout)
        assert r.status_code == 403 and r.json()["code"] == "forbidden", r.text
    assert (await face(api, owner, scout))["status"] == "connected"
    r = await ask(api, maya, scout)
    assert r.status_code == 202, r.text
    frame = await listening.wait_for(lambda f: f["frame"] == "restart")
    assert frame["asked_by"] == maya.participant_id
    # A harness of another workspace is not found.
    other = await api.create_workspace(name="Elsewhere")
    r = await ask(api, other, scout)
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    for s in (deaf, listening):
        await s.close()


async def test_its_agents_read_restarting_with_it(stack: Stack, api: Api) -> None:
    """Your agents' faces read "Restarting" for everybody until your next word."""
    owner = await api.create_workspace()
    jacobian = await restartable(api, owner, "Jacobian")
    r = await api.http.post(
        f"/v1/harnesses/{jacobian.participant_id}/agents",
        json={"key": "j1", "name": "ASCII Art"},
        headers=api.auth(jacobian),
    )
    assert r.status_code == 201, r.text
    agent = r.json()["id"]
    sock = await Socket.open(stack.gateway_a, jacobian, accepts=["restart"])
    maya = await api.add_person(owner, "Maya Chen")

    async def agent_face() -> str:
        r = await api.http.get("/v1/participants", headers=api.auth(maya))
        found = {p["participant_id"]: p for p in r.json()["participants"]}
        return str(found[agent]["status"])

    assert await agent_face() == "connected"
    assert (await ask(api, owner, jacobian)).status_code == 202
    assert await agent_face() == "restarting"
    await sock.close()
    back = await Socket.open(stack.gateway_b, jacobian, accepts=["restart"])
    assert await agent_face() == "connected"
    await back.close()
