"""A person's asks of a harness for an agent: a fork's copy and a new agent
(docs/product/websocket.md, Forks; New agents; docs/adr/0071).

Only a harness that declared ``forks`` (``new_agents``) is asked, and only by its owner or
an owner or admin of the workspace. The harness hears the ask although none of its agents
is in the room; the copy or the new agent it registers in time joins the room with
``agent.attached`` (``fork_of`` / ``made_for``); one registered after the wait is free, and
the answer says why. The eventlog here waits ``WAIT`` seconds rather than a minute
(``CHIPS_AGENT_ASK_WAIT_SECONDS``), so the late case takes seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from chips_devstack.stack import Stack
from tests.e2e.client import Api, Identity
from tests.e2e.test_agents_rooms import declare, new_agent, register, since

WAIT = 4.0


@pytest.fixture(scope="module", autouse=True)
def short_wait(stack: Stack) -> Iterator[None]:
    """The eventlog, restarted with a short ask wait for this module, and back after."""
    stack.extra_env["eventlog"] = {"CHIPS_AGENT_ASK_WAIT_SECONDS": str(WAIT)}
    stack.restart("eventlog")
    yield
    stack.extra_env.pop("eventlog", None)
    stack.restart("eventlog")


async def workspace(api: Api) -> tuple[Identity, Identity, Identity, Identity, str]:
    """Arjun's workspace: Ada (an admin), Gus (a member), Scout, and a room of all three."""
    owner = await api.create_workspace(owner="Arjun Rao")
    ada = await api.add_person(owner, "Ada Park", role="admin")
    gus = await api.add_person(owner, "Gus Ortiz")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Planning", [ada.participant_id, gus.participant_id])
    return owner, ada, gus, scout, room


def fork(room: str, agent: str) -> dict[str, Any]:
    return {"type": "agent.fork", "space_id": room, "agent_id": agent}


def asked(room: str, harness: Identity, name: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "agent.asked",
        "space_id": room,
        "harness_id": harness.participant_id,
    }
    return {**event, "name": name} if name else event


async def the_ask(api: Api, who: Identity, seq: int) -> dict[str, Any]:
    return (await api.read(who, since=seq - 1, limit=1))[0]


async def after_the_wait(ask: dict[str, Any]) -> None:
    """Let the room's wait run out: the ask's own ts, plus the wait, has passed."""
    at = datetime.fromisoformat(ask["ts"].replace("Z", "+00:00"))
    left = at.timestamp() + WAIT + 0.5 - datetime.now(at.tzinfo).timestamp()
    await asyncio.sleep(max(left, 0))


async def test_a_harness_that_did_not_declare_is_never_asked(api: Api) -> None:
    owner, _, _, scout, room = await workspace(api)
    agent = await new_agent(api, scout, "oc", "OpenClaw")
    await api.refused(owner, fork(room, agent), "invalid_event", "does not make copies")
    await api.refused(owner, asked(room, scout), "invalid_event", "does not make new agents")
    await declare(api, owner, scout, "agents", "forks", "new_agents")
    await api.append(owner, fork(room, agent))
    await api.append(owner, asked(room, scout))


async def test_only_its_owner_or_an_admin_asks(api: Api) -> None:
    owner, ada, gus, scout, room = await workspace(api)
    await declare(api, owner, scout, "agents", "forks", "new_agents")
    agent = await new_agent(api, scout, "oc", "OpenClaw")
    reason = "only the harness's owner, or an owner or admin of the workspace"
    await api.refused(gus, fork(room, agent), "forbidden", reason)
    await api.refused(gus, asked(room, scout), "forbidden", reason)
    await api.refused(scout, asked(room, scout), "forbidden", "a person asks")
    # A harness Gus connected is his to ask of, though he is no admin.
    his, _ = await api.connect_harness(gus, "Gus's Helper")
    await declare(api, gus, his, "agents", "new_agents")
    await api.append(gus, asked(room, his))
    await api.append(ada, fork(room, agent))  # an admin asks of anybody's harness
    await api.append(owner, asked(room, scout))


async def test_a_copy_in_time_joins_and_a_late_one_is_free(api: Api) -> None:
    owner, ada, _, scout, room = await workspace(api)
    await declare(api, owner, scout, "agents", "forks")
    agent = await new_agent(api, scout, "oc", "OpenClaw")
    seq = await api.append(ada, fork(room, agent))
    ask = await the_ask(api, scout, seq)  # the harness hears it, though not in the room
    assert (ask["type"], ask["agent_id"], ask["actor"]["id"]) == (
        "agent.fork",
        agent,
        ada.participant_id,
    )
    r = await register(api, scout, key="oc-1", name="OpenClaw", forked_from=agent, space_id=room)
    assert r.status_code == 201, r.text
    copy = r.json()
    assert (copy["space_id"], copy["forked_from"], copy["why"]) == (room, agent, None)
    attached = [e for e in await since(api, owner, seq, room) if e["type"] == "agent.attached"]
    assert [(e["agent_id"], e["fork_of"]) for e in attached] == [(copy["id"], ask["id"])]

    seq = await api.append(owner, fork(room, agent))
    await after_the_wait(await the_ask(api, scout, seq))
    before = await api.head(owner)
    r = await register(api, scout, key="oc-2", name="OpenClaw", forked_from=agent, space_id=room)
    assert r.status_code == 201, r.text
    late = r.json()
    assert (late["space_id"], late["forked_from"]) == (None, agent)
    assert "after the ask" in late["why"] and "registered free" in late["why"], late["why"]
    assert [e["type"] for e in await api.read(owner, since=before)] == ["agent.registered"]


async def test_a_new_agent_in_time_joins_and_a_late_one_is_free(api: Api) -> None:
    owner, _, _, scout, room = await workspace(api)
    await declare(api, owner, scout, "agents", "new_agents")
    seq = await api.append(owner, asked(room, scout))
    ask = await the_ask(api, scout, seq)
    assert (ask["type"], ask["name"]) == ("agent.asked", "Scout 2")  # its harness's, numbered
    assert ask["by"] == owner.participant_id  # who asked
    r = await register(api, scout, key="j1", name=ask["name"], made_for=ask["id"], space_id=room)
    assert r.status_code == 201, r.text
    made = r.json()
    assert (made["space_id"], made["made_for"], made["name"]) == (room, ask["id"], "Scout 2")
    attached = [e for e in await since(api, owner, seq, room) if e["type"] == "agent.attached"]
    assert [(e["agent_id"], e["made_for"]) for e in attached] == [(made["id"], ask["id"])]
    # Answered already: a second agent for the same ask is free.
    again = await register(api, scout, key="j1b", name="Other", made_for=ask["id"])
    assert (again.json()["space_id"], again.json()["why"]) == (
        None,
        "that ask was answered already, by another agent",
    )

    seq = await api.append(owner, asked(room, scout, "Researcher"))
    ask = await the_ask(api, scout, seq)
    assert ask["name"] == "Researcher"
    await after_the_wait(ask)
    r = await register(api, scout, key="j2", name="Researcher", made_for=ask["id"], space_id=room)
    assert r.status_code == 201, r.text
    late = r.json()
    assert late["space_id"] is None and "after the ask" in late["why"], late
    # It is free, not lost: a person adds it to the room like any agent.
    await api.append(
        owner, {"type": "membership.added", "space_id": room, "participant_id": late["id"]}
    )


async def test_a_copy_for_a_room_archived_since_the_ask_is_free(api: Api) -> None:
    """The copy enters its room by the one rule: an archived room takes no agent."""
    owner, _, _, scout, room = await workspace(api)
    await declare(api, owner, scout, "agents", "forks")
    agent = await new_agent(api, scout, "oc", "OpenClaw")
    await api.append(owner, fork(room, agent))
    await api.append(owner, {"type": "space.updated", "space_id": room, "state": "closed"})
    r = await register(api, scout, key="oc-1", name="OpenClaw", forked_from=agent, space_id=room)
    assert r.status_code == 201, r.text
    copy = r.json()
    assert copy["space_id"] is None and "could not join" in copy["why"], copy
