"""What a harness declares it does (docs/product/jacobian-channel.md, Connect it;
docs/product/websocket.md).

"chips declare Jacobian new_spaces follows_rooms agents forks" records the harness's
capabilities (new_spaces, follows_rooms, agents, forks, new_agents, restarts) as the event
harness.declared; the same over HTTP with PUT /v1/harnesses/:id/capabilities.
"""

from __future__ import annotations

import json

from tests.e2e.client import Api, Socket
from tests.e2e.test_cli import chips


async def test_chips_declare_records_what_a_harness_declares_and_everyone_is_told(
    stack, api: Api
) -> None:
    """docs/product/jacobian-channel.md, Connect it: "chips declare Jacobian new_spaces
    follows_rooms agents forks"; a workspace-wide event, so every participant's socket is sent
    it."""
    owner = await api.create_workspace()
    jacobian, _ = await api.connect_harness(owner, "Jacobian")
    maya = await api.add_person(owner, "Maya Chen")
    head = await api.head(owner)
    watch = await Socket.open(stack.gateway_b, maya)
    await watch.subscribe(maya.workspace_id, since=head)

    done = chips(
        stack,
        "declare",
        "Jacobian",
        "new_spaces",
        "follows_rooms",
        "agents",
        "forks",
        token=owner.token,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out == {
        "harness_id": jacobian.participant_id,
        "capabilities": ["agents", "follows_rooms", "forks", "new_spaces"],
    }
    event = await watch.wait_for(
        lambda f: f["frame"] == "event" and f["event"]["type"] == "harness.declared"
    )
    assert event["event"]["harness_id"] == jacobian.participant_id
    assert event["event"]["actor"]["id"] == owner.participant_id

    r = await api.http.get("/v1/participants", headers=api.auth(maya))
    assert r.status_code == 200, r.text
    listed = {p["participant_id"]: p for p in r.json()["participants"]}
    assert listed[jacobian.participant_id]["capabilities"] == [
        "agents",
        "follows_rooms",
        "forks",
        "new_spaces",
    ]
    assert listed[jacobian.participant_id]["owner_id"] == owner.participant_id
    assert listed[maya.participant_id]["capabilities"] == []
    await watch.close()


async def test_a_declaration_replaces_the_last_and_is_the_harness_or_its_owner(
    stack, api: Api
) -> None:
    """The harness itself or its owner declares; the new list replaces the old; anyone else
    is refused with the reason, and an unknown capability is refused before it is sent."""
    owner = await api.create_workspace()
    scout, _ = await api.connect_harness(owner, "Scout")
    maya = await api.add_person(owner, "Maya Chen")
    path = f"/v1/harnesses/{scout.participant_id}/capabilities"

    r = await api.http.put(
        path, json={"capabilities": ["restarts", "agents"]}, headers=api.auth(scout)
    )
    assert r.status_code == 200, r.text
    assert r.json()["capabilities"] == ["agents", "restarts"]
    r = await api.http.put(path, json={"capabilities": ["new_agents"]}, headers=api.auth(owner))
    assert r.status_code == 200, r.text
    seq = r.json()["seq"]

    head = await api.head(owner)
    r = await api.http.put(path, json={"capabilities": ["agents"]}, headers=api.auth(maya))
    assert r.status_code == 403 and "declared by it or its owner" in r.json()["message"]
    r = await api.http.put(path, json={"capabilities": ["telepathy"]}, headers=api.auth(owner))
    assert r.status_code == 400 and r.json()["code"] == "invalid_request"
    r = await api.http.put(
        "/v1/harnesses/hrn_nobody/capabilities", json={"capabilities": []}, headers=api.auth(owner)
    )
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    assert await api.head(owner) == head >= seq

    r = await api.http.get("/v1/participants", headers=api.auth(scout))
    listed = {p["participant_id"]: p for p in r.json()["participants"]}
    assert listed[scout.participant_id]["capabilities"] == ["new_agents"]

    bad = chips(stack, "declare", "Scout", "telepathy", token=owner.token)
    assert bad.returncode == 1 and "not a capability" in bad.stderr
    nobody = chips(stack, "declare", "Nobody", "agents", token=owner.token)
    assert nobody.returncode == 1 and "no harness is called" in nobody.stderr
