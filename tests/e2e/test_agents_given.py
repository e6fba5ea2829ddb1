"""A harness with no agents of its own is given one per room (docs/product/websocket.md, Agents:
"is given one, named after it … one agent per room it is asked for"; "an agent is in one
room at a time"; docs/adr/0146).

A harness that speaks agents has, in each room it is in as itself, an agent named after it
(numbered where the name is taken), listed by ``GET /v1/participants`` with the harness
behind it and its one room. What the harness says there as itself is the agent's, and so
is what it said there before it declared ``agents`` (the declaration gives it its agents in
the rooms it was in already: that is how a room from before is brought over, in the log).
A harness that has not declared ``agents`` is shown its own id wherever an id is written.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import psycopg
import pytest

from tests.e2e.client import Api, Identity, Socket
from tests.e2e.test_agents_view import AGENT_EVENTS, declare, directory


async def given_agents(api: Api, who: Identity, harness: Identity) -> dict[str, dict[str, Any]]:
    """The agents behind ``harness`` that ``who`` is told of, by room."""
    listed = await directory(api, who)
    return {
        p["space_id"]: p
        for p in listed.values()
        if p["kind"] == "agent" and p["harness_id"] == harness.participant_id
    }


async def authors(api: Api, who: Identity, room: str) -> dict[str | None, str]:
    lines = await api.lines(who, room, after_seq=await api.head(who))
    return {li["text"]: li["author_id"] for li in lines if li["kind"] != "system"}


async def test_a_harness_that_speaks_agents_has_one_agent_in_each_room(api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, home = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Alphabet", [maya.participant_id, scout.participant_id])
    await api.say(scout, room, "A is drawn.")  # before it speaks agents
    # Its home and the room it is in each hold an agent of its own, named after it, from
    # before it speaks agents (docs/adr/0154); declaring ``agents`` gives it no more.
    before = await given_agents(api, owner, scout)
    assert set(before) == {home, room}, before
    await declare(api, owner, scout, "agents")
    mine = await given_agents(api, owner, scout)
    assert mine == before
    assert sorted(a["name"] for a in mine.values()) == ["Scout", "Scout 2"]
    agent = mine[room]["participant_id"]
    assert mine[home]["participant_id"] != agent  # one room at a time each
    # What it said there before reads as its agent's; what it says now is the agent's.
    seq = await api.say(scout, room, "B is drawn.")
    said = (await api.read(owner, since=seq - 1, limit=1))[0]
    assert said["actor"]["kind"] == "agent" and said["actor"]["id"] == agent, said
    assert await authors(api, maya, room) == {"A is drawn.": agent, "B is drawn.": agent}
    # A room a person adds it to after that holds another, numbered.
    books = await api.open_space(owner, "Books", [maya.participant_id])
    await api.append(
        owner,
        {"type": "membership.added", "space_id": books, "participant_id": scout.participant_id},
    )
    mine = await given_agents(api, scout, scout)  # the harness reads them too
    assert mine[books]["name"] == "Scout 3", mine
    # Its hello lists them with their rooms.
    sock = await Socket.open(api.base_url, scout)
    hello = sock.hello_frame or {}
    rooms = {a["id"]: a.get("space_id") for a in hello.get("agents", [])}
    assert rooms == {a["participant_id"]: s for s, a in mine.items()}, hello
    await sock.close()


async def test_a_harness_before_agents_has_one_agent_per_room_and_is_shown_its_own_id(
    api: Api,
) -> None:
    """docs/product/websocket.md, Agents: a harness with no agents of its own "is given one,
    named after it … one agent per room"; until it declares ``agents`` it is shown "the
    view you knew before agents": its own agents are its own id wherever an id is written."""
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, home = await api.connect_harness(owner, "Scout")
    live = await Socket.open(api.base_url, scout)
    await live.subscribe(owner.workspace_id)
    await live.attached()
    alphabet = await api.open_space(owner, "Alphabet", [maya.participant_id, scout.participant_id])
    books = await api.open_space(owner, "Books", [maya.participant_id])
    await api.append(
        owner,
        {"type": "membership.added", "space_id": books, "participant_id": scout.participant_id},
    )
    # People see an agent of its own in each room, named after it, numbered once taken.
    mine = await given_agents(api, owner, scout)
    assert set(mine) == {home, alphabet, books}, mine
    assert [mine[r]["name"] for r in (home, alphabet, books)] == ["Scout", "Scout 2", "Scout 3"]
    assert len({a["participant_id"] for a in mine.values()}) == 3  # one room each
    agent = mine[alphabet]["participant_id"]
    # What it says is its agent's to people, and its own to it.
    seq = await api.say(scout, alphabet, "A is drawn.")
    said = (await api.read(owner, since=seq - 1, limit=1))[0]
    assert said["actor"]["id"] == agent, said
    assert (await authors(api, maya, alphabet))["A is drawn."] == agent
    heard = (await api.read(scout, since=seq - 1, limit=1))[0]
    assert heard["actor"] == {"kind": "harness", "id": scout.participant_id}, heard
    assert (await authors(api, scout, alphabet))["A is drawn."] == scout.participant_id
    # Its directory and the room's members name it, and no agent.
    listed = await directory(api, scout)
    assert [p for p in listed.values() if p["kind"] == "agent"] == [], listed
    assert not any(pid.startswith("agt_") for pid in listed), listed
    sheet = await api.sheet(scout, alphabet, seq)
    assert [(m["participant_id"], m["kind"]) for m in sheet["members"]] == [
        (owner.participant_id, "person"),
        (maya.participant_id, "person"),
        (scout.participant_id, "harness"),
    ]
    people_see = await api.sheet(owner, alphabet, seq)
    assert agent in [m["participant_id"] for m in people_see["members"]]
    # On its socket: Maya's words come as message.new for it, in a room it is in as
    # itself; nothing it is sent names an agent.
    spoken = await api.say(maya, books, "@Scout which is first?")
    await live.wait_for_seq(spoken)
    new = await live.wait_for(
        lambda f: f["frame"] == "event" and f["event"].get("type") == "message.new"
    )
    assert new["event"]["space_id"] == books, new
    assert new["event"]["addressed_to"] == [scout.participant_id], new
    sent = json.dumps(live.events())
    assert "agt_" not in sent and '"agent"' not in sent, sent
    assert not {e["type"] for e in live.events()} & AGENT_EVENTS
    await live.close()


def referee_db(stack: Any) -> str:
    return stack.env["CHIPS_DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://", 1)


def list_to_give(stack: Any, *workspaces: str) -> None:
    with psycopg.connect(referee_db(stack)) as conn:
        for ws in workspaces:
            conn.execute(
                "INSERT INTO agents_to_give (workspace_id) VALUES (%s) ON CONFLICT DO NOTHING",
                (ws,),
            )


def still_to_give(stack: Any, *workspaces: str) -> list[str]:
    with psycopg.connect(referee_db(stack)) as conn:
        rows = conn.execute(
            "SELECT workspace_id FROM agents_to_give WHERE workspace_id = ANY(%s)",
            (list(workspaces),),
        ).fetchall()
    return [r[0] for r in rows]


def gives_sent(stack: Any, *workspaces: str) -> dict[str, list[str]]:
    """The referee's ``agents.give`` keys the log answered, by workspace."""
    with psycopg.connect(referee_db(stack)) as conn:
        rows = conn.execute(
            "SELECT workspace_id, key FROM idempotency WHERE credential_id = 'crd_referee'"
            " AND key LIKE 'agents-given%%' AND workspace_id = ANY(%s)",
            (list(workspaces),),
        ).fetchall()
    sent: dict[str, list[str]] = {}
    for ws, given_key in rows:
        sent.setdefault(ws, []).append(given_key)
    return sent


async def given_out(stack: Any, *workspaces: str) -> None:
    for _ in range(300):
        if not still_to_give(stack, *workspaces):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the referee left {still_to_give(stack, *workspaces)} listed")


@pytest.mark.timeout(300)  # the referee is killed and started twice
async def test_the_referee_gives_each_listed_workspace_once(stack: Any, api: Api) -> None:
    """Each workspace listed in ``agents_to_give`` is sent ``agents.give`` under a key of
    its own, and its row goes once the log answered; listed again (a referee that died
    between the send and the delete), it is sent again and the door logs nothing new."""
    first = await api.create_workspace(owner="Arjun Rao")
    await api.connect_harness(first, "Scout")
    second = await api.create_workspace(name="Globex", owner="Bea Stone")
    await api.connect_harness(second, "Ledger")
    spaces = (first.workspace_id, second.workspace_id)
    heads = [await api.head(first), await api.head(second)]
    stack.kill("referee")
    try:
        list_to_give(stack, *spaces)
    finally:
        stack.start("referee")
        stack.wait_ready("referee")
    await given_out(stack, *spaces)
    sent = gives_sent(stack, *spaces)
    assert sorted(sent) == sorted(spaces), sent  # one send each, each answered
    assert all(len(keys) == 1 for keys in sent.values()), sent
    # Under 1740's key (docs/adr/0154): harnesses before agents are given theirs too, so
    # every workspace is sent afresh, whatever 1700's and 1720's sends were answered.
    assert sent == {ws: [f"agents-given-1740:{ws}"] for ws in spaces}, sent
    # Sent again, as after a restart between the send and the delete.
    stack.kill("referee")
    try:
        list_to_give(stack, *spaces)
    finally:
        stack.start("referee")
        stack.wait_ready("referee")
    await given_out(stack, *spaces)
    assert gives_sent(stack, *spaces) == sent
    assert [await api.head(first), await api.head(second)] == heads
