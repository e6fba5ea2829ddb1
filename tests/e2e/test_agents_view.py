"""Who is shown agents, and how (docs/product/websocket.md, Agents; docs/adr/0079).

A harness that has not declared ``agents`` is shown the view from before agents, on the
socket (live and replayed) and over HTTP alike: its own agents are its own id, another
harness's agent is a participant of kind ``harness``, and no agent event reaches it. One
that declared ``agents`` sees agents as agents, and its hello lists its own with their
rooms. ``agent.registered`` and ``agent.updated`` go to the agent's harness, to the people
who are not guests, and to whoever shares a room with the agent; the directory lists each
agent with its harness, scoped the same way; and a rebuild of the read models from seq 0
gives the same rows with agents in them.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from chips_devstack.stack import Stack
from tests.e2e.client import Api, Identity, Socket

AGENT_EVENTS = {
    "agent.registered",
    "agent.updated",
    "agent.attached",
    "agent.released",
    "membership.replaced",
    "agent.fork",
    "agent.asked",
    "message.held",
}


async def register(api: Api, harness: Identity, agent_key: str, name: str) -> httpx.Response:
    return await api.http.post(
        f"/v1/harnesses/{harness.participant_id}/agents",
        json={"key": agent_key, "name": name},
        headers=api.auth(harness),
    )


async def new_agent(api: Api, harness: Identity, agent_key: str, name: str) -> str:
    r = await register(api, harness, agent_key, name)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def declare(api: Api, owner: Identity, harness: Identity, *capabilities: str) -> int:
    r = await api.http.put(
        f"/v1/harnesses/{harness.participant_id}/capabilities",
        json={"capabilities": list(capabilities)},
        headers=api.auth(owner),
    )
    assert r.status_code == 200, r.text
    return int(r.json()["seq"])


async def add(api: Api, owner: Identity, room: str, who: str) -> int:
    return await api.append(
        owner, {"type": "membership.added", "space_id": room, "participant_id": who}
    )


async def directory(api: Api, who: Identity) -> dict[str, dict[str, Any]]:
    r = await api.http.get("/v1/participants", headers=api.auth(who))
    assert r.status_code == 200, r.text
    return {p["participant_id"]: p for p in r.json()["participants"]}


async def everything(api: Api, who: Identity) -> list[dict[str, Any]]:
    """Every event ``who`` may read, from the start, over HTTP."""
    found: list[dict[str, Any]] = []
    since = 0
    while True:
        r = await api.http.get(
            "/v1/events", params={"since": since, "limit": 500}, headers=api.auth(who)
        )
        assert r.status_code == 200, r.text
        found += r.json()["events"]
        if r.json()["next_since"] == since:
            return found
        since = r.json()["next_since"]


def mentions(anything: Any, text: str) -> bool:
    return text in json.dumps(anything)


async def test_a_harness_before_agents_sees_only_itself_on_the_socket_and_over_http(
    stack: Stack, api: Api
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")  # written before agents
    ledger, _ = await api.connect_harness(owner, "Ledger")
    await declare(api, owner, ledger, "agents")
    room = await api.open_space(owner, "Planning", [maya.participant_id])
    live = await Socket.open(stack.gateway_a, scout, accepts=["events"])
    await live.subscribe(owner.workspace_id)
    await live.attached()

    oc = await new_agent(api, scout, "oc", "OpenClaw")
    l1 = await new_agent(api, ledger, "l1", "Lena")
    await add(api, owner, room, oc)
    await add(api, owner, room, l1)
    r = await register(api, scout, "oc", "OpenClaw Prime")  # renamed by its harness
    assert r.status_code == 200, r.text
    said = await api.say(maya, room, "Morning, all")
    await live.wait_for_seq(said)
    assert "agents" not in (live.hello_frame or {})

    replayed = await Socket.open(stack.gateway_b, scout)
    await replayed.subscribe(owner.workspace_id, since=0)
    await replayed.wait_for_seq(said)
    over_http = [e for e in await everything(api, scout) if e["seq"] >= live.events()[0]["seq"]]
    for events in (live.events(), replayed.events(), over_http):
        assert not {e["type"] for e in events} & AGENT_EVENTS
        assert not mentions(events, oc), "its own agent's id reached it"
        assert not mentions(events, '"agent"'), "an agent was shown as an agent"
        joined = [e for e in events if e["type"] == "membership.added" and e["space_id"] == room]
        # It is in the room (behind its agent) as a member; the other harness's agent
        # came in as a participant like any.
        assert [(e["participant_id"], e.get("standing", "member")) for e in joined] == [
            (scout.participant_id, "member"),
            (ledger.participant_id, "member"),
            (l1, "member"),
        ]
    # Live and replayed are the same frames, from where the live socket began.
    start = live.events()[0]["seq"]
    assert [e for e in replayed.events() if e["seq"] >= start] == live.events()

    # Over HTTP: a room's events, its context and the directory show the same view.
    room_events = await api.read(scout, space_id=room)
    assert room_events and not mentions(room_events, oc)
    assert not {e["type"] for e in room_events} & AGENT_EVENTS
    r = await api.http.get(f"/v1/spaces/{room}/context", headers=api.auth(scout))
    assert r.status_code == 200, r.text
    assert r.json()["lines"] and not mentions(r.json(), oc)
    sheet = await api.sheet(scout, room, said)
    assert [(m["participant_id"], m["kind"]) for m in sheet["members"]] == [
        (owner.participant_id, "person"),
        (maya.participant_id, "person"),
        (scout.participant_id, "harness"),
        (l1, "harness"),
    ]
    listed = await api.spaces(scout, said)
    lines = await api.lines(scout, room, said)
    assert not mentions([listed, lines], oc) and not mentions(sheet, '"agent"')
    people = await directory(api, scout)
    assert oc not in people and not mentions(people, '"agent"')
    assert people[l1]["kind"] == "harness" and "harness_id" not in people[l1]
    assert people[scout.participant_id]["kind"] == "harness"
    for sock in (live, replayed):
        await sock.close()


async def test_a_harness_before_agents_hears_its_agents_move_speak_free_and_attach_as_itself(
    stack: Stack, api: Api
) -> None:
    """Its agent moved, taken out, speaking while free and brought back, and another put
    in its own place: it is sent no agent.attached, agent.released, message.held or
    membership.replaced, on the socket (live and replayed) or over HTTP, and what its
    agents said, held or not, reads as its own."""
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")  # written before agents
    a = await api.open_space(owner, "A", [maya.participant_id])
    b = await api.open_space(owner, "B", [maya.participant_id])
    c = await api.open_space(owner, "C", [scout.participant_id])
    live = await Socket.open(stack.gateway_a, scout, accepts=["events"])
    await live.subscribe(owner.workspace_id)
    await live.attached()
    start = await api.head(owner)

    oc = await new_agent(api, scout, "oc", "OpenClaw")
    other = await new_agent(api, scout, "o2", "Other")
    await add(api, owner, a, oc)
    r = await api.http.post(f"/v1/agents/{oc}/move", json={"space_id": b}, headers=api.auth(owner))
    assert r.status_code == 200, r.text
    await api.append(owner, {"type": "membership.removed", "space_id": b, "participant_id": oc})
    me = {"kind": "agent", "id": oc}
    await api.append(scout, {"type": "message.post", "text": "while free", "actor": me})
    back = await add(api, owner, a, oc)  # its held words are posted in A
    r = await api.http.post(
        f"/v1/agents/{other}/attach",
        json={"space_id": c, "replacing": scout.participant_id},
        headers=api.auth(scout),
    )
    assert r.status_code == 200, r.text
    said = await api.say(owner, c, "Morning")
    logged = await api.read(owner, since=start)
    assert {"agent.attached", "agent.released", "membership.replaced"} <= {
        e["type"] for e in logged
    }
    # Its words were held (message.held, told to its harness alone), then posted in A.
    assert [e.get("held_since") is not None for e in logged if e.get("text") == "while free"] == [
        True
    ]
    await live.wait_for_seq(said)

    replayed = await Socket.open(stack.gateway_b, scout)
    await replayed.subscribe(owner.workspace_id, since=start)
    await replayed.wait_for_seq(said)
    over_http = await api.read(scout, since=start)
    for events in (live.events(), replayed.events(), over_http):
        assert not {e["type"] for e in events} & AGENT_EVENTS, [e["type"] for e in events]
        assert not mentions(events, oc) and not mentions(events, other)
        assert not mentions(events, '"agent"'), "an agent was shown as an agent"
        held = [e for e in events if e.get("text") == "while free"]
        assert [(e["type"], e["space_id"], e["actor"]["id"]) for e in held] == [
            ("message.post", a, scout.participant_id)
        ]
        # Where it is: in A behind its agent, out of B again, and in C as it was.
        rows = [
            (e["type"], e["space_id"])
            for e in events
            if e["type"] in ("membership.added", "membership.removed")
            and e["participant_id"] == scout.participant_id
        ]
        assert rows == [
            ("membership.added", a),
            ("membership.removed", a),
            ("membership.added", b),
            ("membership.removed", b),
            ("membership.added", a),
        ], rows
    assert [e for e in replayed.events() if e["seq"] > start] == [
        e for e in live.events() if e["seq"] > start
    ]
    assert back > start
    for sock in (live, replayed):
        await sock.close()


async def test_a_harness_that_declared_agents_sees_them_and_its_hello_lists_its_own(
    stack: Stack, api: Api
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    jacobian, _ = await api.connect_harness(owner, "Jacobian")
    scout, _ = await api.connect_harness(owner, "Scout")
    await declare(api, owner, jacobian, "agents")
    room = await api.open_space(owner, "Planning", [maya.participant_id])
    j1 = await new_agent(api, jacobian, "j1", "ASCII Art")
    j2 = await new_agent(api, jacobian, "j2", "Openings Prep")
    oc = await new_agent(api, scout, "oc", "OpenClaw")
    await add(api, owner, room, j1)
    last = await add(api, owner, room, oc)

    sock = await Socket.open(stack.gateway_a, jacobian)
    hello = sock.hello_frame or {}
    # The agent Jacobian was given in its home as it declared agents comes first (ADR 0146).
    given, *own = hello["agents"]
    assert (given["name"], given["key"]) == ("Jacobian", f"chips:{given['space_id']}")
    assert own == [
        {
            "id": j1,
            "name": "ASCII Art",
            "key": "j1",
            "space_id": room,
            "main": False,
            "state": "active",
        },
        {
            "id": j2,
            "name": "Openings Prep",
            "key": "j2",
            "space_id": None,
            "main": False,
            "state": "active",
        },
    ]
    await sock.subscribe(owner.workspace_id, since=0)
    await sock.wait_for_seq(last)
    types = [(e["type"], e.get("agent_id") or e.get("participant_id")) for e in sock.events()]
    assert ("agent.registered", j1) in types and ("agent.registered", j2) in types
    assert ("agent.attached", j1) in types and ("membership.added", oc) in types
    # Another harness's agent, met in a room: told of it as an agent, with its harness.
    people = await directory(api, jacobian)
    assert people[oc]["kind"] == "agent"
    assert (people[oc]["harness_id"], people[oc]["harness"]) == (scout.participant_id, "Scout")
    assert (people[j1]["space_id"], people[j2]["space_id"]) == (room, None)
    await sock.close()


async def test_agent_news_reaches_its_harness_the_people_and_its_room_only(
    stack: Stack, api: Api
) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    gus = await api.add_person(owner, "Gus Guest", role="guest")
    gia = await api.add_person(owner, "Gia Guest", role="guest")
    jacobian, _ = await api.connect_harness(owner, "Jacobian")
    stranger, _ = await api.connect_harness(maya, "Stranger")
    await declare(api, owner, jacobian, "agents")
    await declare(api, maya, stranger, "agents")
    room = await api.open_space(owner, "Planning", [gia.participant_id])
    listeners = {
        who.participant_id: await Socket.open(stack.gateway_b, who)
        for who in (maya, gus, gia, jacobian, stranger)
    }
    for sock in listeners.values():
        await sock.subscribe(owner.workspace_id)
        await sock.attached()

    j1 = await new_agent(api, jacobian, "j1", "ASCII Art")  # in no room yet
    await add(api, owner, room, j1)
    r = await register(api, jacobian, "j1", "Ascii")  # renamed: agent.updated
    assert r.status_code == 200, r.text
    # Workspace-wide, told to everybody: once it is in, whatever came before is too.
    marker = await declare(api, maya, stranger, "agents", "restarts")
    for sock in listeners.values():
        await sock.wait_for_seq(marker)

    def news(events: list[dict[str, Any]]) -> list[str]:
        return [e["type"] for e in events if e["type"] in ("agent.registered", "agent.updated")]

    told = {pid: news(sock.events()) for pid, sock in listeners.items()}
    assert told[maya.participant_id] == ["agent.registered", "agent.updated"]
    assert told[jacobian.participant_id] == ["agent.registered", "agent.updated"]
    # The guest in its room hears of it once it shares the room; the other, never.
    assert told[gia.participant_id] == ["agent.updated"]
    assert told[gus.participant_id] == []
    assert told[stranger.participant_id] == []
    # GET /v1/events says the same.
    # (the agents Jacobian and Stranger were given in their homes as they declared agents,
    # before anybody listened, are left out: ADR 0146)
    for who in (maya, gus, gia, jacobian, stranger):
        since_start = [e for e in await everything(api, who) if "chips:" not in e.get("key", "")]
        assert news(since_start) == told[who.participant_id]

    # The directory: a guest sees who shares a room with them, a harness the agents it
    # meets and its own, a person who is not a guest everybody.
    assert j1 in await directory(api, maya)
    assert j1 in await directory(api, gia)
    assert j1 not in await directory(api, gus)
    assert set(await directory(api, gus)) == {gus.participant_id}
    assert j1 not in await directory(api, stranger)
    mine = (await directory(api, jacobian))[j1]
    assert mine == {
        **mine,
        "kind": "agent",
        "name": "Ascii",
        "harness_id": jacobian.participant_id,
        "harness": "Jacobian",
        "state": "active",
        "main": False,
        "space_id": room,
        "status": "connected",
    }
    for sock in listeners.values():
        await sock.close()


async def test_the_room_shows_agents_not_the_harness_behind_them(api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    jacobian, _ = await api.connect_harness(owner, "Jacobian")
    room = await api.open_space(owner, "Planning")
    j1 = await new_agent(api, jacobian, "j1", "ASCII Art")
    last = await add(api, owner, room, j1)
    sheet = await api.sheet(owner, room, last)
    assert [(m["participant_id"], m["kind"]) for m in sheet["members"]] == [
        (owner.participant_id, "person"),
        (j1, "agent"),
    ]
    listed = next(s for s in (await api.spaces(owner, last))["spaces"] if s["id"] == room)
    assert jacobian.participant_id not in [m["participant_id"] for m in listed["members"]]
    lines = [line["text"] for line in await api.lines(owner, room, last)]
    assert lines == ["Arjun Rao added ASCII Art"]


async def test_a_rebuild_with_agents_gives_identical_tables(stack: Stack, api: Api) -> None:
    """Registering, renaming, archiving, adding, moving, removing and attaching agents, a
    free agent's held words, an agent's run that heard a message; then a rebuild."""
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    jacobian, _ = await api.connect_harness(owner, "Jacobian")
    scout, _ = await api.connect_harness(maya, "Scout")
    await declare(api, owner, jacobian, "agents")
    rooms = [await api.open_space(owner, f"Room {i}", [maya.participant_id]) for i in range(3)]
    agents = [await new_agent(api, jacobian, f"j{i}", f"J{i}") for i in range(3)]
    agents.append(await new_agent(api, scout, "oc", "OpenClaw"))
    for agent, room in zip(agents, [*rooms, rooms[0]], strict=True):
        await add(api, owner, room, agent)
    r = await api.http.post(
        f"/v1/agents/{agents[0]}/move", json={"space_id": rooms[1]}, headers=api.auth(owner)
    )
    assert r.status_code == 200, r.text
    await api.append(
        owner,
        {"type": "membership.removed", "space_id": rooms[2], "participant_id": agents[2]},
    )
    assert (await register(api, jacobian, "j1", "Jay One")).status_code == 200
    r = await api.http.post(
        f"/v1/harnesses/{jacobian.participant_id}/agents",
        json={"key": "j0", "name": "J0", "state": "archived"},
        headers=api.auth(jacobian),
    )
    assert r.status_code == 200, r.text
    r = await api.http.patch(
        f"/v1/agents/{agents[3]}", json={"name": "Claw"}, headers=api.auth(owner)
    )
    assert r.status_code == 200, r.text
    # Attach one in another's place (membership.replaced), a free agent's words held and
    # posted where it joins (message.held), an agent's run that heard a message.
    j3 = await new_agent(api, jacobian, "j3", "J3")
    r = await api.http.post(
        f"/v1/agents/{j3}/attach",
        json={"space_id": rooms[1], "replacing": agents[1]},
        headers=api.auth(jacobian),
    )
    assert r.status_code == 200, r.text
    me = {"kind": "agent", "id": agents[2]}
    await api.append(jacobian, {"type": "message.post", "text": "while free", "actor": me})
    await add(api, owner, rooms[2], agents[2])
    await api.append(
        jacobian,
        {"type": "run.started", "run_id": "run_j2", "space_id": rooms[2], "goal": "x", "actor": me},
    )
    said = await api.say(maya, rooms[2], "meanwhile")
    heard = (await api.read(owner, since=said - 1, limit=1))[0]
    await api.append(
        jacobian,
        {"type": "message.heard", "run_id": "run_j2", "message_id": heard["message_id"]},
    )
    last = await api.say(maya, rooms[1], "done")
    kinds = {e["type"] for e in await everything(api, jacobian)}
    assert {"membership.replaced", "message.held", "message.heard"} <= kinds, kinds

    await api.spaces(owner, last)  # the read models hold it all
    r = await api.http.get("/v1/runs/run_j2", params={"after_seq": last}, headers=api.auth(owner))
    assert r.json()["agent_id"] == agents[2]
    people = await directory(api, owner)
    assert people[agents[1]]["name"] == "Jay One"
    assert people[agents[0]]["state"] == "archived"
    assert (people[agents[3]]["name"], people[agents[3]].get("name_by")) == (
        "Claw",
        owner.participant_id,
    )
    before = stack.run_module("chips_projector", "digest").strip()
    stack.run_module("chips_projector", "rebuild")
    after = stack.run_module("chips_projector", "digest").strip()
    assert before == after
