"""Agents and their rooms, decided at the eventlog's door (docs/product/websocket.md: Agents, One
room at a time, Forks, New agents; docs/adr/0071).

A harness registers its agents by key; an agent is in one room at a time, and every way
of putting it in one is held to one rule as the event is written; leaving a room stops
the agent's work there first; a free agent's words are held for the next room it joins.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from chips_devstack.stack import Stack
from tests.e2e.client import Api, Identity, Socket, key
from tests.e2e.test_runs import start, step


async def register(api: Api, harness: Identity, **body: Any) -> httpx.Response:
    return await api.http.post(
        f"/v1/harnesses/{harness.participant_id}/agents", json=body, headers=api.auth(harness)
    )


async def new_agent(api: Api, harness: Identity, agent_key: str, name: str, **body: Any) -> str:
    r = await register(api, harness, key=agent_key, name=name, **body)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def added(room: str, pid: str) -> dict[str, Any]:
    return {"type": "membership.added", "space_id": room, "participant_id": pid}


def removed(room: str, pid: str) -> dict[str, Any]:
    return {"type": "membership.removed", "space_id": room, "participant_id": pid}


def seen(events: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """Each event's type and whom or what it is about."""
    return [
        (e["type"], e.get("participant_id") or e.get("agent_id") or e.get("run_id")) for e in events
    ]


# What the referee says of a room's turns, in its own time (docs/adr/0090): not a step of
# what the door logged for an operation.
REFEREE_S = {"room.working", "room.idle"}


async def since(api: Api, who: Identity, seq: int, room: str) -> list[dict[str, Any]]:
    """The room's events after ``seq``, without the referee's (they come when they come)."""
    events = await api.read(who, since=seq, space_id=room)
    return [e for e in events if e["type"] not in REFEREE_S]


async def workspace(api: Api) -> tuple[Identity, Identity, Identity, str]:
    """Arjun's workspace: Maya, his harness Scout (its home), and a room with Maya."""
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, home = await api.connect_harness(owner, "Scout")
    await declare(api, owner, scout, "agents")  # it speaks agents: it is told of them
    return owner, maya, scout, home


async def declare(api: Api, owner: Identity, harness: Identity, *capabilities: str) -> None:
    r = await api.http.put(
        f"/v1/harnesses/{harness.participant_id}/capabilities",
        json={"capabilities": list(capabilities)},
        headers=api.auth(owner),
    )
    assert r.status_code == 200, r.text


# --- registering ----------------------------------------------------------------------------


async def test_the_same_key_is_the_same_agent_and_names_are_numbered(api: Api) -> None:
    owner, _, scout, _ = await workspace(api)
    ledger, _ = await api.connect_harness(owner, "OpenClaw")
    first = await register(api, scout, key="oc-1", name="OpenClaw")
    assert first.status_code == 201, first.text
    agent = first.json()
    assert agent["name"] == "OpenClaw 2"  # a harness has the name already
    assert (agent["harness_id"], agent["key"], agent["state"], agent["main"]) == (
        scout.participant_id,
        "oc-1",
        "active",
        False,
    )
    assert agent["space_id"] is None and agent["name_by"] is None
    again = await register(api, scout, key="oc-1", name="OpenClaw")
    assert again.status_code == 200, again.text
    assert (again.json()["id"], again.json()["name"]) == (agent["id"], "OpenClaw 2")
    assert again.json()["seq"] is None  # nothing changed, nothing logged
    # Case and spaces aside, "open claw" is taken twice over (the harness, and the agent).
    spaced = await register(api, scout, key="oc-2", name="open claw")
    assert (spaced.status_code, spaced.json()["name"]) == (201, "open claw 3")
    # A person's rename holds over the harness's.
    r = await api.http.patch(
        f"/v1/agents/{agent['id']}", json={"name": "Clawdia"}, headers=api.auth(owner)
    )
    assert r.status_code == 200, r.text
    assert (r.json()["name"], r.json()["name_by"]) == ("Clawdia", owner.participant_id)
    held = await register(api, scout, key="oc-1", name="Something else")
    assert (held.status_code, held.json()["name"]) == (200, "Clawdia")
    # Only the harness itself registers its agents.
    r = await api.http.post(
        f"/v1/harnesses/{scout.participant_id}/agents",
        json={"key": "x", "name": "X"},
        headers=api.auth(ledger),
    )
    assert (r.status_code, r.json()["code"]) == (403, "forbidden")
    events = await api.read(owner, since=0)
    # (and the agent Scout was given in its home when it declared agents: ADR 0146)
    registered = [e for e in events if e["type"] == "agent.registered"]
    assert [e["agent_id"] for e in registered if not e["key"].startswith("chips:")] == [
        agent["id"],
        spaced.json()["id"],
    ]


async def test_the_main_agent_stays_in_its_main_room(api: Api) -> None:
    owner, maya, scout, home = await workspace(api)
    r = await register(api, scout, key="main", name="Scout", lead=True)
    assert r.status_code == 201, r.text
    main = r.json()
    assert (main["main"], main["space_id"], main["name"]) == (True, home, "Scout 2")
    room = await api.open_space(owner, "Planning", [maya.participant_id])
    other = await new_agent(api, scout, "o", "Other")
    await api.refused(owner, added(room, main["id"]), "lead_room", "stays in its Main room")
    await api.refused(owner, removed(home, main["id"]), "lead_room", "stays in its Main room")
    await api.refused(owner, added(home, other), "lead_room", "takes people and no other")
    archived = await register(api, scout, key="main", name="Scout", state="archived")
    assert (archived.status_code, archived.json()["code"]) == (409, "lead_room")
    moved = await api.http.post(
        f"/v1/agents/{main['id']}/move", json={"space_id": room}, headers=api.auth(owner)
    )
    assert (moved.status_code, moved.json()["code"]) == (409, "lead_room")
    replaced = await api.http.post(
        f"/v1/agents/{other}/attach",
        json={"space_id": home, "replacing": main["id"]},
        headers=api.auth(scout),
    )
    assert (replaced.status_code, replaced.json()["code"]) == (409, "lead_room")


# --- a person adding, removing, moving ------------------------------------------------------


async def test_adding_and_removing_an_agent_with_its_runs_stopped_first(api: Api) -> None:
    owner, maya, scout, _ = await workspace(api)
    agent = await new_agent(api, scout, "oc", "OpenClaw")
    room = await api.open_space(owner, "Planning", [maya.participant_id])
    before = await api.head(owner)
    await api.append(owner, added(room, agent))
    events = await since(api, owner, before, room)
    assert seen(events) == [
        ("membership.added", scout.participant_id),
        ("membership.added", agent),
        ("agent.attached", agent),
    ]
    assert events[0]["standing"] == "agents"
    assert (events[2]["space_id"], events[2]["harness_id"]) == (room, scout.participant_id)
    run = await start(api, scout, room)
    before = await api.head(owner)
    await api.append(owner, removed(room, agent))
    events = await since(api, owner, before, room)
    assert seen(events) == [
        ("run.cancel", run),
        ("agent.released", agent),
        ("membership.removed", agent),
        ("membership.removed", scout.participant_id),
    ]
    assert events[1]["reason"] == "removed"
    await api.refused(scout, step(run), "invalid_event", "cancelled")


async def test_an_agent_attached_brings_the_room_s_last_lines(stack: Stack, api: Api) -> None:
    """Its harness is sent agent.attached with catch_up: the room's last lines before the
    agent joined, in context's shape, the same live and replayed."""
    owner, maya, scout, _ = await workspace(api)
    agent = await new_agent(api, scout, "oc", "OpenClaw")
    room = await api.open_space(owner, "Planning", [maya.participant_id])
    await api.say(maya, room, "The PO is due Friday")
    await api.say(owner, room, "Northwind holds the slot")
    live = await Socket.open(stack.gateway_a, scout)
    await live.subscribe(owner.workspace_id)
    await live.attached()

    def attached(frame: dict[str, Any]) -> bool:
        event = frame.get("event") or {}
        return event.get("type") == "agent.attached" and event.get("agent_id") == agent

    await api.append(owner, added(room, agent))
    told = (await live.wait_for(attached))["event"]
    catch_up = told["catch_up"]
    said = [(line["from"]["id"], line["text"]) for line in catch_up["lines"]]
    assert said == [
        (maya.participant_id, "The PO is due Friday"),
        (owner.participant_id, "Northwind holds the slot"),
    ], catch_up
    assert (catch_up["since_seq"], catch_up["truncated"]) == (0, False)
    replayed = await Socket.open(stack.gateway_b, scout)
    await replayed.subscribe(owner.workspace_id, since=0)
    assert (await replayed.wait_for(attached))["event"] == told
    # A person is told the agent came, with no lines: they are the agent's next turn's.
    r = await api.read(owner, since=told["seq"] - 1, limit=1)
    assert "catch_up" not in r[0]
    for sock in (live, replayed):
        await sock.close()


async def test_a_person_adding_an_agent_that_is_elsewhere_is_told_where(api: Api) -> None:
    owner, maya, scout, _ = await workspace(api)
    agent = await new_agent(api, scout, "oc", "OpenClaw")
    a = await api.open_space(owner, "A", [maya.participant_id])
    b = await api.open_space(owner, "B", [maya.participant_id])
    await api.append(owner, added(a, agent))
    r = await api.post_event(owner, {**added(b, agent), "idempotency_key": key()})
    assert r.status_code == 409, r.text
    body = r.json()
    assert (body["code"], body["space_id"]) == ("agent_elsewhere", a)
    # It is moved instead: its run in the room it leaves is cancelled first.
    run = await start(api, scout, a)
    before = await api.head(owner)
    moved = await api.http.post(
        f"/v1/agents/{agent}/move", json={"space_id": b}, headers=api.auth(owner)
    )
    assert moved.status_code == 200, moved.text
    assert moved.json()["space_id"] == b
    left = await since(api, owner, before, a)
    assert seen(left) == [
        ("run.cancel", run),
        ("agent.released", agent),
        ("membership.removed", agent),
        ("membership.removed", scout.participant_id),
    ]
    assert (left[1]["reason"], left[1]["moved_to"]) == ("moved", b)
    joined = await since(api, owner, before, b)
    assert seen(joined)[-1] == ("agent.attached", agent)


async def test_an_archived_room_takes_no_agent(api: Api) -> None:
    owner, maya, scout, _ = await workspace(api)
    agent = await new_agent(api, scout, "oc", "OpenClaw")
    room = await api.open_space(owner, "Planning", [maya.participant_id])
    await api.append(owner, {"type": "space.updated", "space_id": room, "state": "closed"})
    r = await api.post_event(owner, {**added(room, agent), "idempotency_key": key()})
    assert (r.status_code, r.json()["code"]) == (409, "room_closed")


async def test_two_people_adding_one_agent_at_once_put_it_in_one_room(api: Api) -> None:
    owner, maya, scout, _ = await workspace(api)
    agent = await new_agent(api, scout, "oc", "OpenClaw")
    a = await api.open_space(owner, "A", [maya.participant_id])
    b = await api.open_space(maya, "B", [owner.participant_id])
    answers = await asyncio.gather(
        api.post_event(owner, {**added(a, agent), "idempotency_key": key()}),
        api.post_event(maya, {**added(b, agent), "idempotency_key": key()}),
    )
    statuses = sorted(r.status_code for r in answers)
    assert statuses == [200, 409], [r.text for r in answers]
    won = a if answers[0].status_code == 200 else b
    lost = next(r for r in answers if r.status_code == 409).json()
    assert (lost["code"], lost["space_id"]) == ("agent_elsewhere", won)
    events = await api.read(owner, since=0)
    attached = [e for e in events if e["type"] == "agent.attached" and e["agent_id"] == agent]
    assert [e["space_id"] for e in attached] == [won]


async def test_every_way_in_at_once_leaves_each_agent_in_one_room(api: Api, api_b: Api) -> None:
    """Two people add an agent to two rooms through two gateways while its harness attaches
    it to a third, for five agents at once: each ends in exactly one room, each refusal
    names a room the agent was in, and what the log says of each room adds up to that."""
    owner, maya, scout, _ = await workspace(api)
    agents = [await new_agent(api, scout, f"oc{i}", f"Agent {i}") for i in range(5)]
    a = await api.open_space(owner, "A", [maya.participant_id])
    b = await api.open_space(maya, "B", [owner.participant_id])
    c = await api.open_space(owner, "C", [scout.participant_id])
    rooms = (a, b, c)
    start = await api.head(owner)

    async def attach(agent: str) -> httpx.Response:
        return await api_b.http.post(
            f"/v1/agents/{agent}/attach", json={"space_id": c}, headers=api_b.auth(scout)
        )

    tries = []
    for agent in agents:
        tries += [
            api.post_event(owner, {**added(a, agent), "idempotency_key": key()}),
            api_b.post_event(maya, {**added(b, agent), "idempotency_key": key()}),
            attach(agent),
        ]
    answers = await asyncio.gather(*tries)
    for r in answers:
        assert r.status_code in (200, 409), r.text
        if r.status_code == 409:
            assert (r.json()["code"], r.json()["space_id"] in rooms) == ("agent_elsewhere", True)
    events = await api.read(owner, since=start)
    r = await api.http.get("/v1/participants", headers=api.auth(owner))
    now = {p["participant_id"]: p.get("space_id") for p in r.json()["participants"]}
    for agent in agents:
        assert now[agent] in rooms
        # In each room, the agent's arrivals less its departures: one where it is, else none.
        net = {room: 0 for room in rooms}
        for e in events:
            if e.get("agent_id") == agent and e["type"] in ("agent.attached", "agent.released"):
                net[e["space_id"]] += 1 if e["type"] == "agent.attached" else -1
        assert net == {room: int(room == now[agent]) for room in rooms}, (agent, net)
    sheets = [await api.sheet(owner, room, events[-1]["seq"]) for room in rooms]
    held = [m["participant_id"] for sheet in sheets for m in sheet["members"]]
    assert sorted(p for p in held if p in agents) == sorted(agents)


# --- archive, unarchive, delete -------------------------------------------------------------


async def test_archiving_releases_and_unarchiving_brings_back(api: Api) -> None:
    owner, maya, scout, _ = await workspace(api)
    agent = await new_agent(api, scout, "oc", "OpenClaw")
    room = await api.open_space(owner, "Planning", [maya.participant_id])
    await api.append(owner, added(room, agent))
    run = await start(api, scout, room)
    before = await api.head(owner)
    await api.append(owner, {"type": "space.updated", "space_id": room, "state": "closed"})
    events = await since(api, owner, before, room)
    assert seen(events) == [
        ("run.cancel", run),
        ("agent.released", agent),
        ("membership.removed", agent),
        ("membership.removed", scout.participant_id),
        ("space.updated", None),
    ]
    assert events[1]["reason"] == "archived"
    before = await api.head(owner)
    await api.append(owner, {"type": "space.updated", "space_id": room, "state": "open"})
    events = await since(api, owner, before, room)
    assert seen(events) == [
        ("space.updated", None),
        ("membership.added", scout.participant_id),
        ("membership.added", agent),
        ("agent.attached", agent),
    ]


async def test_unarchiving_brings_back_no_agent_that_is_elsewhere_by_now(api: Api) -> None:
    """Released by the archive, then added to another room: the unarchive leaves it there."""
    owner, maya, scout, _ = await workspace(api)
    agent = await new_agent(api, scout, "oc", "OpenClaw")
    room = await api.open_space(owner, "Planning", [maya.participant_id])
    elsewhere = await api.open_space(owner, "Launch", [maya.participant_id])
    await api.append(owner, added(room, agent))
    await api.append(owner, {"type": "space.updated", "space_id": room, "state": "closed"})
    await api.append(owner, added(elsewhere, agent))
    before = await api.head(owner)
    await api.append(owner, {"type": "space.updated", "space_id": room, "state": "open"})
    assert seen(await since(api, owner, before, room)) == [("space.updated", None)]
    r = await register(api, scout, key="oc", name="OpenClaw")
    assert r.json()["space_id"] == elsewhere


async def test_deleting_a_room_releases_its_agents_and_the_harness_hears_it(api: Api) -> None:
    owner, maya, scout, _ = await workspace(api)
    agent = await new_agent(api, scout, "oc", "OpenClaw")
    room = await api.open_space(owner, "Planning", [maya.participant_id])
    await api.append(owner, added(room, agent))
    run = await start(api, scout, room)
    erased = await api.append(owner, {"type": "space.erased", "space_id": room})
    heard = [e for e in await api.read(scout, since=erased - 3) if e.get("space_id") == room]
    assert seen(heard) == [("run.cancel", run), ("agent.released", agent), ("space.erased", None)]
    assert heard[1]["reason"] == "deleted"
    free = await register(api, scout, key="oc", name="OpenClaw")
    assert free.json()["space_id"] is None


async def test_its_owner_deleting_a_followed_room_archives_the_agent_in_it(api: Api) -> None:
    """A harness that follows rooms deletes its side of a room its owner deletes: its agent
    there is released with delete, and Chips archives it. When an admin who is not the
    harness's owner deletes one, the agent is only released: free, and still active."""
    owner, maya, scout, _ = await workspace(api)
    await declare(api, owner, scout, "agents", "follows_rooms")
    agent = await new_agent(api, scout, "oc", "OpenClaw")
    room = await api.open_space(owner, "Planning", [maya.participant_id])
    await api.append(owner, added(room, agent))
    run = await start(api, scout, room)
    erased = await api.append(owner, {"type": "space.erased", "space_id": room})
    heard = [e for e in await api.read(scout, since=erased - 4) if e["type"] != "room.idle"]
    assert seen(heard) == [
        ("run.cancel", run),
        ("agent.released", agent),
        ("agent.updated", agent),
        ("space.erased", None),
    ]
    assert (heard[1]["reason"], heard[1]["delete"]) == ("deleted", True)
    assert heard[2]["state"] == "archived"
    assert heard[3]["follows"] == [{"harness_id": scout.participant_id, "delete": True}]
    again = await register(api, scout, key="oc", name="OpenClaw", state="archived")
    assert (again.status_code, again.json()["state"], again.json()["seq"]) == (
        200,
        "archived",
        None,
    )

    ada = await api.add_person(owner, "Ada Park", role="admin")
    other = await new_agent(api, scout, "oc2", "Other")
    room = await api.open_space(ada, "Launch", [maya.participant_id])
    await api.append(ada, added(room, other))
    erased = await api.append(ada, {"type": "space.erased", "space_id": room})
    heard = [e for e in await api.read(scout, since=erased - 2) if e["type"] != "room.idle"]
    assert seen(heard) == [("agent.released", other), ("space.erased", None)]
    assert "delete" not in heard[0] or heard[0]["delete"] is None
    free = await register(api, scout, key="oc2", name="Other")
    assert (free.json()["state"], free.json()["space_id"]) == ("active", None)


async def test_archiving_an_agent_archives_the_room_it_was_alone_in(api: Api) -> None:
    owner, maya, scout, _ = await workspace(api)
    agent = await new_agent(api, scout, "oc", "OpenClaw")
    room = await api.open_space(owner, "Planning", [maya.participant_id])
    await api.append(owner, added(room, agent))
    run = await start(api, scout, room)
    before = await api.head(owner)
    r = await register(api, scout, key="oc", name="OpenClaw", state="archived")
    assert (r.status_code, r.json()["state"], r.json()["space_id"]) == (200, "archived", None)
    events = await since(api, owner, before, room)
    assert seen(events) == [
        ("run.cancel", run),
        ("agent.released", agent),
        ("membership.removed", agent),
        ("membership.removed", scout.participant_id),
        ("space.updated", None),
    ]
    assert (events[1]["reason"], events[4]["state"]) == ("agent_archived", "closed")
    back = await register(api, scout, key="oc", name="OpenClaw")
    assert (back.json()["state"], back.json()["space_id"]) == ("active", room)


# --- attach ---------------------------------------------------------------------------------


async def test_attach_puts_an_agent_in_anothers_place(api: Api) -> None:
    owner, maya, scout, _ = await workspace(api)
    one = await new_agent(api, scout, "one", "One")
    two = await new_agent(api, scout, "two", "Two")
    room = await api.open_space(owner, "Planning", [maya.participant_id])
    await api.append(owner, added(room, one))
    before = await api.head(owner)
    r = await api.http.post(
        f"/v1/agents/{two}/attach",
        json={"space_id": room, "replacing": one},
        headers=api.auth(scout),
    )
    assert r.status_code == 200, r.text
    assert r.json()["space_id"] == room
    events = await since(api, owner, before, room)
    assert seen(events) == [
        ("membership.added", two),
        ("agent.attached", two),
        ("membership.replaced", two),
        ("agent.released", one),
        ("membership.removed", one),
    ]
    assert events[2]["replaced"] == one and events[1]["replacing"] == one
    # In the harness's own place: it stays in the room, behind the agent, and the room
    # sheet shows the agent where it showed the harness.
    shared = await api.open_space(owner, "Shared", [scout.participant_id])
    three = await new_agent(api, scout, "three", "Three")
    r = await api.http.post(
        f"/v1/agents/{three}/attach",
        json={"space_id": shared, "replacing": scout.participant_id},
        headers=api.auth(scout),
    )
    assert r.status_code == 200, r.text
    sheet = await api.sheet(owner, shared, after_seq=await api.head(owner))
    assert [m["participant_id"] for m in sheet["members"]] == [owner.participant_id, three]
    # A person attaches nothing: a harness does, with its own token.
    r = await api.http.post(
        f"/v1/agents/{one}/attach", json={"space_id": room}, headers=api.auth(owner)
    )
    assert r.status_code == 403, r.text


# --- forks ----------------------------------------------------------------------------------


async def test_a_forks_copy_joins_the_room_it_was_asked_for(api: Api) -> None:
    owner, maya, scout, _ = await workspace(api)
    await declare(api, owner, scout, "agents", "forks")
    agent = await new_agent(api, scout, "oc", "OpenClaw")
    room = await api.open_space(owner, "Planning", [maya.participant_id])
    asked = await api.append(owner, {"type": "agent.fork", "space_id": room, "agent_id": agent})
    ask = (await api.read(owner, since=asked - 1, limit=1))[0]
    r = await register(api, scout, key="oc-copy", name="OpenClaw", forked_from=agent, space_id=room)
    assert r.status_code == 201, r.text
    copy = r.json()
    assert (copy["space_id"], copy["forked_from"], copy["name"]) == (room, agent, "OpenClaw 2")
    attached = [e for e in await since(api, owner, asked, room) if e["type"] == "agent.attached"]
    assert [(e["agent_id"], e["fork_of"]) for e in attached] == [(copy["id"], ask["id"])]


# --- a free agent's words -------------------------------------------------------------------


async def test_what_a_free_agent_says_is_posted_where_it_next_joins(api: Api) -> None:
    owner, maya, scout, _ = await workspace(api)
    agent = await new_agent(api, scout, "oc", "OpenClaw")
    a = await api.open_space(owner, "A", [maya.participant_id])
    b = await api.open_space(owner, "B", [maya.participant_id])
    await api.append(owner, added(a, agent))
    await api.append(owner, removed(a, agent))
    me = {"kind": "agent", "id": agent}
    first = await api.append(scout, {"type": "message.post", "text": "first", "actor": me})
    await api.append(scout, {"type": "message.post", "space_id": a, "text": "second", "actor": me})
    held = [e for e in await api.read(scout, since=first - 1) if e["type"] == "message.held"]
    assert [(e["text"], e["left_space_id"]) for e in held] == [("first", a), ("second", a)]
    # People see how many of its words wait, never the words: those are its harness's.
    assert await waiting(api, maya, agent) == 2
    assert not [e for e in await api.read(maya, since=first - 1) if e["type"] == "message.held"]
    before = await api.head(owner)
    await api.append(owner, added(b, agent))
    events = await since(api, owner, before, b)
    assert [e["type"] for e in events][-3:] == ["agent.attached", "message.post", "message.post"]
    posts = events[-2:]
    assert [p["text"] for p in posts] == ["first", "second"]
    assert all(p["actor"]["id"] == agent and p.get("held_since") for p in posts)
    assert await waiting(api, maya, agent) == 0


async def test_an_agent_never_in_a_room_opens_one_with_the_owner(api: Api) -> None:
    """Its first words open a room with its harness's owner, and are said there."""
    owner, _, scout, _ = await workspace(api)
    agent = await new_agent(api, scout, "oc", "OpenClaw")
    me = {"kind": "agent", "id": agent}
    seq = await api.append(scout, {"type": "message.post", "text": "Hello, Arjun", "actor": me})
    events = await api.read(owner, since=seq - 4)
    assert [e["type"] for e in events][-4:] == [
        "space.created",
        "membership.added",
        "agent.attached",
        "message.post",
    ]
    room = events[-1]["space_id"]
    assert (events[-1]["text"], events[-1]["actor"]["id"]) == ("Hello, Arjun", agent)
    sheet = await api.sheet(owner, room, seq)
    assert {m["participant_id"]: m["standing"] for m in sheet["members"]} == {
        owner.participant_id: "owner",
        agent: "member",
    }
    # From then on a post naming no room is said there.
    again = await api.append(scout, {"type": "message.post", "text": "Still here", "actor": me})
    said = await api.read(owner, since=again - 1, limit=1)
    assert (said[0]["type"], said[0]["space_id"]) == ("message.post", room)


async def waiting(api: Api, who: Identity, agent: str) -> int:
    """How many of an agent's words wait, as the directory tells ``who``."""
    r = await api.http.get("/v1/participants", headers=api.auth(who))
    assert r.status_code == 200, r.text
    listed = {p["participant_id"]: p for p in r.json()["participants"]}
    assert "while free" not in r.text and "first" not in json.dumps(listed[agent])
    return int(listed[agent]["held"])
