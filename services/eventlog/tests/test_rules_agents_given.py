"""The agent Chips gives a harness with none of its own, one per room (rules/agents/given.py,
docs/adr/0146)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

World = Any  # the conftest's World, built through the door

pytestmark = pytest.mark.unit


def declare(w: World, harness_id: str, *capabilities: str) -> list[dict[str, Any]]:
    event = {"type": "harness.declared", "harness_id": harness_id, "capabilities": capabilities}
    return w.ok(w.p(w.OWN), event)


def given(logged: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The agents given in ``logged``, by room."""
    return {
        e["space_id"]: e
        for e in logged
        if e["type"] == "agent.registered" and e["key"].startswith("chips:")
    }


def test_declaring_agents_gives_one_agent_in_each_room_the_harness_is_in(w: World) -> None:
    logged = declare(w, w.H1, "new_spaces", "agents")
    by_room = given(logged)
    assert set(by_room) == {w.room, w.other, w.home}
    names = [by_room[room]["name"] for room in (w.room, w.other, w.home)]
    assert names == ["Scout", "Scout 2", "Scout 3"]  # named after it, numbered once taken
    for room, registered in by_room.items():
        agent_id = registered["agent_id"]
        assert w.state.room_of_agent(agent_id) == room  # one room at a time
        assert w.state.standing(room, w.H1) == "agents"  # it stands behind its agent
        replaced = [e for e in logged if e["type"] == "membership.replaced"]
        assert {"space_id": room, "participant_id": agent_id, "replaced": w.H1} in [
            {k: e[k] for k in ("space_id", "participant_id", "replaced")} for e in replaced
        ]
    # Declaring again gives nothing more.
    assert given(declare(w, w.H1, "agents")) == {}


def test_a_harness_before_agents_is_given_its_agents_too(w: World) -> None:
    # docs/adr/0154: declared ``agents`` or not, a harness with none of its own is given one
    # in each room it comes into (its pre-agents view still shows it its own id).
    space = w.space(w.OWN, [w.H2], title="Books")
    (agent,) = w.state.agents_of(w.H2)
    assert (agent.name, agent.agent.key) == ("Ledger", f"chips:{space}")
    assert w.state.room_of_agent(agent.id) == space
    assert w.state.standing(space, w.H2) == "agents"
    # In a workspace from before, Chips gives it its agents in the rooms it stands in.
    logged = w.ok(w.operator, {"command": "agents.give"})
    assert w.state.standing(w.room, w.H2) == "agents"
    assert [e["name"] for e in given(logged).values() if e["harness_id"] == w.H2] == ["Ledger 2"]
    assert w.ok(w.operator, {"command": "agents.give"}) == []  # again: nothing owed


def test_a_person_adding_the_harness_gives_it_an_agent_there(w: World) -> None:
    declare(w, w.H2, "agents")  # Ledger is in the room only
    space = w.space(w.OWN, [w.MEM], title="Books")
    added = {"type": "membership.added", "space_id": space, "participant_id": w.H2}
    logged = w.ok(w.p(w.OWN), added)
    types = [e["type"] for e in logged]
    assert types == [
        "membership.added",
        "agent.registered",
        "membership.added",
        "agent.attached",
        "membership.replaced",
    ]
    agent_id = logged[1]["agent_id"]
    assert logged[1]["name"] == "Ledger 2"  # Ledger's first is in the room
    assert w.state.room_of_agent(agent_id) == space
    # A room opened with it gives one too.
    opened = w.ok(w.p(w.OWN), {"type": "space.created", "kind": "group", "members": [w.H2]})
    assert [e["type"] for e in opened][1] == "agent.registered"


def test_the_harness_speaking_as_itself_is_read_as_its_agent_there(w: World) -> None:
    by_room = given(declare(w, w.H1, "agents"))
    logged = w.ok(w.h(w.H1), {"type": "message.post", "space_id": w.room, "text": "done"})
    assert logged[0]["actor"]["id"] == by_room[w.room]["agent_id"]


def test_a_harness_with_an_agent_of_its_own_is_given_none(w: World) -> None:
    declare(w, w.H2, "agents")
    command = {"command": "agent.register", "harness_id": w.H2, "key": "oc", "name": "Oc"}
    w.ok(w.h(w.H2), command)
    space = w.space(w.OWN, [w.H2], title="Books")
    assert w.state.standing(space, w.H2) == "member"
    assert [a.name for a in w.state.agents_of(w.H2)] == ["Ledger", "Oc"]


def test_attach_in_the_harness_s_place_takes_the_given_agent_s(w: World) -> None:
    by_room = given(declare(w, w.H1, "agents"))
    stand_in = by_room[w.other]["agent_id"]
    command = {"command": "agent.register", "harness_id": w.H1, "key": "j1", "name": "J1"}
    j1 = next(e["agent_id"] for e in w.ok(w.h(w.H1), command) if e["type"] == "agent.registered")
    attach = {"command": "agent.attach", "agent_id": j1, "space_id": w.other, "replacing": w.H1}
    logged = w.ok(w.h(w.H1), attach)
    replaced = next(e for e in logged if e["type"] == "membership.replaced")
    assert replaced["replaced"] == stand_in
    assert w.state.room_of_agent(j1) == w.other
    assert w.state.room_of_agent(stand_in) is None  # free
    assert w.state.standing(w.other, w.H1) == "agents"


def test_a_room_asked_of_it_holds_the_harness_until_it_claims_it(w: World) -> None:
    declare(w, w.H1, "new_spaces", "agents")
    asked = w.created(w.p(w.OWN), {"type": "space.created", "kind": "group", "asked_of": w.H1})
    assert w.state.standing(asked, w.H1) == "member"
    claim = {"command": "harness.open_space", "key": "po-7", "space_id": asked}
    logged = w.ok(w.h(w.H1), claim)
    agent_id = given(logged)[asked]["agent_id"]
    leads = [e["agent_id"] for e in logged if e["type"] == "space.lead_set"]
    assert leads == [agent_id]  # led, from the claim, by its agent there
    opened = w.ok(w.h(w.H1), {"command": "harness.open_space", "key": "po-8", "title": "PO 8"})
    assert len(given(opened)) == 1  # a room it opens by key holds its agent too


def test_a_key_chips_gives_is_refused_to_a_harness(w: World) -> None:
    command = {"command": "agent.register", "harness_id": w.H1, "key": "chips:x", "name": "X"}
    w.says_no(w.h(w.H1), command, "invalid_event", "one Chips gives")


def test_chips_gives_the_agents_owed_from_before_the_rule(w: World) -> None:
    # A harness that declared agents before the rule stands in its rooms as itself: the
    # door state as such a log left it.
    scout = w.state.participant(w.H1)
    w.state.participants[w.H1] = replace(scout, capabilities=("agents", "new_spaces"))
    logged = w.ok(w.operator, {"command": "agents.give"})
    assert set(given(logged)) == {w.room, w.other, w.home}
    assert w.state.standing(w.room, w.H1) == "agents"
    assert w.ok(w.operator, {"command": "agents.give"}) == []  # again: nothing owed
    w.says_no(w.p(w.OWN), {"command": "agents.give"}, "forbidden", "Chips gives")


def test_the_main_agent_takes_the_given_agent_s_place_in_its_main_room(w: World) -> None:
    stand_in = given(declare(w, w.H1, "agents"))[w.home]["agent_id"]
    command = {"command": "agent.register", "harness_id": w.H1, "key": "j", "name": "J"}
    logged = w.ok(w.h(w.H1), {**command, "lead": True})
    main = next(e["agent_id"] for e in logged if e["type"] == "agent.registered")
    replaced = next(e for e in logged if e["type"] == "membership.replaced")
    assert (replaced["participant_id"], replaced["replaced"]) == (main, stand_in)
    assert w.state.room_of_agent(main) == w.home
    assert w.state.room_of_agent(stand_in) is None


def test_taking_the_harness_out_takes_the_agent_it_was_given(w: World) -> None:
    # docs/adr/0154: a person may name the harness itself (as a harness before agents, or
    # an old client, knows it); the agent it was given goes with it.
    space = w.space(w.OWN, [w.H2], title="Books")
    (agent,) = w.state.agents_of(w.H2)
    gone = {"type": "membership.removed", "space_id": space, "participant_id": w.H2}
    logged = w.ok(w.p(w.OWN), gone)
    assert [(e["type"], e.get("participant_id")) for e in logged] == [
        ("agent.released", None),
        ("membership.removed", agent.id),
        ("membership.removed", w.H2),
    ]
    assert logged[-1]["standing"] == "agents"
    assert w.state.standing(space, w.H2) is None
    assert w.state.room_of_agent(agent.id) is None


def test_an_archive_releases_the_given_agent_and_the_harness_stays(w: World) -> None:
    opened = w.ok(w.h(w.H2), {"command": "harness.open_space", "key": "po", "title": "PO"})
    space = opened[0]["space_id"]
    (agent,) = w.state.agents_of(w.H2)
    closed = w.ok(w.h(w.H2), {"type": "space.updated", "space_id": space, "state": "closed"})
    assert "agent.released" in [e["type"] for e in closed]
    assert w.state.room_of_agent(agent.id) is None
    # It stays behind its agent's place in the room, so it is told the archive and may
    # unarchive the room it opened.
    assert w.state.standing(space, w.H2) == "agents"
    assert w.H2 not in [e.get("participant_id") for e in closed]
    back = w.ok(w.h(w.H2), {"type": "space.updated", "space_id": space, "state": "open"})
    assert "agent.attached" in [e["type"] for e in back]
    assert w.state.room_of_agent(agent.id) == space
    assert w.state.standing(space, w.H2) == "agents"
    # Nobody else's archive opens so: a harness that did not open it is refused.
    w.ok(w.p(w.OWN), {"type": "space.updated", "space_id": space, "state": "closed"})
    w.says_no(
        w.h(w.H1), {"type": "space.updated", "space_id": space, "state": "open"}, "forbidden", ""
    )


def test_a_to_naming_the_harness_picks_the_agent_it_was_given_there(w: World) -> None:
    space = w.space(w.OWN, [w.H2], title="Books")
    (agent,) = w.state.agents_of(w.H2)
    post = {"type": "message.post", "space_id": space, "text": "which first?", "to": [w.H2]}
    (said,) = w.ok(w.p(w.OWN), post)
    assert said["addressed_to"] == [agent.id]


def test_add_by_handle_reaches_the_harness_not_the_agent_it_was_given(w: World) -> None:
    # Its first given agent bears its very name; the composer's /add @ledger adds the
    # harness, which is given its agent here (docs/adr/0154).
    w.space(w.OWN, [w.H2], title="Books")
    space = w.space(w.OWN, [w.MEM], title="Later")
    logged = w.ok(w.p(w.OWN), {"type": "message.post", "space_id": space, "text": "/add @ledger"})
    assert logged[0]["type"] == "membership.added" and logged[0]["participant_id"] == w.H2


def test_a_lead_chosen_by_the_harness_s_id_is_the_agent_it_was_given_there(w: World) -> None:
    # A person's client that knows the harness's id, not its agent's (docs/adr/0154).
    space = w.space(w.OWN, [w.H2], title="Books")
    (agent,) = w.state.agents_of(w.H2)
    lead = {"type": "space.lead_set", "space_id": space, "agent_id": w.H2}
    (logged,) = w.ok(w.p(w.OWN), lead)
    assert logged["agent_id"] == agent.id
