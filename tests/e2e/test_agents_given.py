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

from typing import Any

from tests.e2e.client import Api, Identity, Socket
from tests.e2e.test_agents_view import declare, directory


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
    assert await given_agents(api, owner, scout) == {}
    await declare(api, owner, scout, "agents")
    # Its home and the room it was in each hold an agent of its own, named after it.
    mine = await given_agents(api, owner, scout)
    assert set(mine) == {home, room}, mine
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


async def test_a_harness_before_agents_is_still_shown_its_own_id(api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await api.open_space(owner, "Alphabet", [maya.participant_id, scout.participant_id])
    seq = await api.say(scout, room, "A is drawn.")
    said = (await api.read(scout, since=seq - 1, limit=1))[0]
    assert said["actor"] == {"kind": "harness", "id": scout.participant_id}
    listed = await directory(api, scout)
    assert [p for p in listed.values() if p["kind"] == "agent"] == []
    assert (await authors(api, scout, room))["A is drawn."] == scout.participant_id
