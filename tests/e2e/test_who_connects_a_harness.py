"""Who may connect a harness (docs/adr/0060).

docs/product/jacobian-channel.md: "Add the harness the way you add any harness … chips connect
custom --name Jacobian --no-dial, on any machine paired with the server"; docs/product/spaces.md:
"a person opens spaces", and the harness's direct space is opened for whoever connected
it. So any person of the workspace connects a harness of their own: an owner, an admin
or a member. A guest does not, and neither does a harness; each refusal says why and
logs nothing.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.client import Api, Socket
from tests.e2e.test_agents_given import given_agents
from tests.e2e.test_cli import chips


@pytest.mark.parametrize("role", ["admin", "member"])
async def test_any_person_but_a_guest_connects_a_harness_of_their_own(
    api: Api, stack, role: str
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen", role=role)
    scout, home = await api.connect_harness(maya, "Scout")
    sock = await Socket.open(stack.gateway_a, scout)
    try:
        assert sock.hello_frame is not None
        assert sock.hello_frame["harness"]["owner_id"] == maya.participant_id
        assert sock.hello_frame["spaces"] == [home]
    finally:
        await sock.close()
    # Its direct space is Maya's, with the harness in it: as the agent Chips gave it
    # there, to Maya (docs/adr/0154).
    sheet = await api.sheet(maya, home)
    given = await given_agents(api, maya, scout)
    assert {(m["participant_id"], m["standing"]) for m in sheet["members"]} == {
        (maya.participant_id, "owner"),
        (given[home]["participant_id"], "member"),
    }


async def test_a_guest_does_not_connect_a_harness(api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    guest = await api.add_person(owner, "Sam Guest", role="guest")
    before = await api.head(owner)
    r = await api.http.post("/v1/harnesses", json={"name": "Scout"}, headers=api.auth(guest))
    assert r.status_code == 403, r.text
    assert r.json()["code"] == "forbidden"
    assert r.json()["message"] == (
        "a guest of the workspace does not connect harnesses; any other person of the workspace may"
    )
    assert await api.head(owner) == before


async def test_a_harness_does_not_connect_a_harness(api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    r = await api.http.post("/v1/harnesses", json={"name": "Ledger"}, headers=api.auth(scout))
    assert r.status_code == 403 and r.json()["code"] == "forbidden", r.text
    assert "a person connects a harness" in r.json()["message"]


async def test_a_member_connects_one_from_the_command_line_and_a_guest_is_told_why(
    api: Api, stack
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    done = chips(stack, "connect", "custom", "--name", "Ledger", "--json", token=maya.token)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["CHIPS_HARNESS_TOKEN"].startswith("chips_at_")
    guest = await api.add_person(owner, "Sam Guest", role="guest")
    refused = chips(stack, "connect", "custom", "--name", "Ledger 2", token=guest.token)
    assert refused.returncode == 1
    assert "a guest of the workspace does not connect harnesses" in refused.stderr
    assert "Traceback" not in refused.stderr
    helped = chips(stack, "connect", "--help")
    assert "any person of the workspace but a guest" in " ".join(helped.stdout.lower().split())
