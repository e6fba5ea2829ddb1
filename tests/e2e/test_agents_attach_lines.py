"""Attach takes the place of what was there, including what it said (docs/product/websocket.md,
Agents: ``POST /v1/agents/:id/attach { space_id, replacing }`` — "what that one said in the
room reads as the agent's from then on"; docs/adr/0136).

The room's lines name the agent as the author of what the replaced harness or agent said
there: read over HTTP by a person and by a harness that speaks agents, and in the lines a
harness is handed on the socket (a turn's context, an agent's catch-up).
"""

from __future__ import annotations

from typing import Any

from tests.e2e.client import Api, Identity
from tests.e2e.test_agents_speaking import as_agent, listening, new_agent


async def attach(api: Api, harness: Identity, agent: str, room: str, replacing: str) -> None:
    r = await api.http.post(
        f"/v1/agents/{agent}/attach",
        json={"space_id": room, "replacing": replacing},
        headers=api.auth(harness),
    )
    assert r.status_code == 200, r.text


async def authors(api: Api, who: Identity, room: str) -> dict[str | None, str]:
    """Each message's words and who the room's lines say wrote it, as of now."""
    lines = await api.lines(who, room, after_seq=await api.head(who))
    return {li["text"]: li["author_id"] for li in lines if li["kind"] != "system"}


async def declared(api: Api, harness: Identity) -> None:
    body = {"harness_id": harness.participant_id, "capabilities": ["agents"]}
    await api.append(harness, {"type": "harness.declared", **body})


async def test_an_agent_in_its_harness_s_place_wrote_what_the_harness_said(api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    ledger, _ = await api.connect_harness(owner, "Ledger")
    await declared(api, scout)
    await declared(api, ledger)
    room = await api.open_space(
        owner, "Shared", [maya.participant_id, scout.participant_id, ledger.participant_id]
    )
    said = {"type": "message.post", "space_id": room}
    await api.append(scout, {**said, "text": "F is drawn."})
    await api.append(maya, {**said, "text": "Lovely."})
    three = await new_agent(api, scout, "three", "Three")
    # Before the attach the lines are those of the agent Scout was given there (ADR 0146):
    # the test reads a change.
    given = (await authors(api, owner, room))["F is drawn."]
    assert given.startswith("agt_") and given != three
    await attach(api, scout, three, room, scout.participant_id)
    for reader in (owner, maya, scout, ledger):
        assert await authors(api, reader, room) == {
            "F is drawn.": three,
            "Lovely.": maya.participant_id,
        }, reader.participant_id
    # Ledger's turn there hands it the lines with the agent as their author.
    sock = await listening(api, ledger)
    seq = await api.say(maya, room, "@Ledger what do you make of F?")

    def turn(frame: dict[str, Any]) -> bool:
        return frame["frame"] == "event" and frame["event"]["seq"] == seq

    taken = (await sock.wait_for(turn))["event"]
    assert taken["type"] == "message.new"
    froms = {li["text"]: li["from"]["id"] for li in taken["context"]["lines"] if "text" in li}
    assert froms["F is drawn."] == three, taken["context"]
    assert froms["Lovely."] == maya.participant_id
    # An agent of Ledger's attached there later is caught up on the same lines.
    oc = await new_agent(api, ledger, "oc", "Oc")
    await attach(api, ledger, oc, room, ledger.participant_id)

    def caught_up(frame: dict[str, Any]) -> bool:
        event = frame["event"] if frame["frame"] == "event" else {}
        return event.get("type") == "agent.attached" and event.get("agent_id") == oc

    told = (await sock.wait_for(caught_up))["event"]
    lines = told["catch_up"]["lines"]
    assert {li["text"]: li["from"]["id"] for li in lines if "text" in li}["F is drawn."] == three
    await sock.close()


async def test_an_agent_in_another_agent_s_place_wrote_what_that_one_said(api: Api) -> None:
    owner = await api.create_workspace(owner="Arjun Rao")
    maya = await api.add_person(owner, "Maya Chen")
    scout, _ = await api.connect_harness(owner, "Scout")
    await declared(api, scout)
    one = await new_agent(api, scout, "one", "One")
    two = await new_agent(api, scout, "two", "Two")
    room = await api.open_space(owner, "Planning", [maya.participant_id])
    added = {"type": "membership.added", "space_id": room, "participant_id": one}
    await api.append(owner, added)
    said = {"type": "message.post", "space_id": room, "actor": as_agent(one)}
    await api.append(scout, {**said, "text": "A to E are drawn."})
    await attach(api, scout, two, room, one)
    assert await authors(api, owner, room) == {"A to E are drawn.": two}
    assert await authors(api, scout, room) == {"A to E are drawn.": two}
    # Two's own turn there is not handed back what it now said.
    sock = await listening(api, scout)
    seq = await api.say(maya, room, "@Two and F?")

    def turn(frame: dict[str, Any]) -> bool:
        return frame["frame"] == "event" and frame["event"]["seq"] == seq

    taken = (await sock.wait_for(turn))["event"]
    assert taken["for"] == [two]
    texts = [li.get("text") for li in taken["context"]["lines"]]
    assert "A to E are drawn." not in texts, taken["context"]
    await sock.close()
