"""Agents at the door (rules/agents/, docs/adr/0071): registering, the one rule for
where an agent may be, entering and leaving rooms, attach and move, and a free agent's
held words."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from chips_common.append import Actor, AppendRequest
from chips_eventlog.door import Door
from chips_eventlog.refused import Refused
from chips_eventlog.rules.common import ASK_WAIT

pytestmark = pytest.mark.unit

World = Any  # the conftest's World, built through the door


# --- helpers --------------------------------------------------------------------------------


def register(w: World, harness_id: str = "hrn_h1", **fields: Any) -> list[dict[str, Any]]:
    command = {"command": "agent.register", "harness_id": harness_id, **fields}
    return w.ok(w.h(harness_id), command)


def agent_of(logged: list[dict[str, Any]]) -> str:
    return next(e["agent_id"] for e in logged if e["type"] == "agent.registered")


def new_agent(w: World, key: str, name: str, harness_id: str = "hrn_h1", **fields: Any) -> str:
    return agent_of(register(w, harness_id, key=key, name=name, **fields))


def added(space_id: str, pid: str, **fields: Any) -> dict[str, Any]:
    return {"type": "membership.added", "space_id": space_id, "participant_id": pid, **fields}


def removed(space_id: str, pid: str) -> dict[str, Any]:
    return {"type": "membership.removed", "space_id": space_id, "participant_id": pid}


def attach(agent_id: str, space_id: str, replacing: str | None = None) -> dict[str, Any]:
    command = {"command": "agent.attach", "agent_id": agent_id, "space_id": space_id}
    if replacing is not None:
        command["replacing"] = replacing
    return command


def move(agent_id: str, space_id: str) -> dict[str, Any]:
    return {"command": "agent.move", "agent_id": agent_id, "space_id": space_id}


def types(logged: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in logged]


def as_agent(w: World, agent_id: str) -> Actor:
    return Actor(kind="agent", id=agent_id, harness_id=w.state.participants[agent_id].owner_id)


def group(w: World, members: list[str], title: str = "G") -> str:
    return w.space(w.OWN, members, title=title)


def says_no(w: World, actor: Actor, event: Any, code: str, fragment: str) -> Refused:
    refusal: Refused = w.says_no(actor, event, code, fragment)
    return refusal


# --- registering ----------------------------------------------------------------------------


def test_only_the_harness_itself_registers(w: World) -> None:
    command = {"command": "agent.register", "harness_id": w.H1, "key": "k", "name": "Oc"}
    says_no(w, w.p(w.OWN), command, "forbidden", "registers its own agents")
    says_no(w, w.h(w.H2), command, "forbidden", "registers its own agents")


def test_the_same_key_is_the_same_agent_and_nothing_changed_logs_nothing(w: World) -> None:
    logged = register(w, key="oc-1", name="OpenClaw")
    assert types(logged) == ["agent.registered"]
    first = logged[0]
    assert (first["name"], first["state"], first["main"]) == ("OpenClaw", "active", False)
    assert "space_id" not in first  # free
    assert register(w, key="oc-1", name="OpenClaw") == []
    renamed = register(w, key="oc-1", name="Claw")
    assert types(renamed) == ["agent.updated"]
    assert renamed[0]["name"] == "Claw" and renamed[0]["agent_id"] == first["agent_id"]


def test_names_are_unique_ignoring_case_and_spaces_and_the_number_is_kept(w: World) -> None:
    first = new_agent(w, "a", "OpenClaw")
    second = register(w, key="b", name="open claw")[0]
    assert second["name"] == "open claw 2"
    third = register(w, key="c", name="OpenClaw")[0]
    assert third["name"] == "OpenClaw 3"
    # Asking again under the name it was numbered from keeps the number.
    assert register(w, key="c", name="OpenClaw") == []
    assert w.state.participants[third["agent_id"]].name == "OpenClaw 3"
    # A harness's name is taken too.
    assert register(w, key="d", name="scout")[0]["name"] == "scout 2"
    assert w.state.participants[first].name == "OpenClaw"


def test_a_persons_rename_holds_over_the_harness(w: World) -> None:
    agent = new_agent(w, "a", "OpenClaw")
    logged = w.ok(w.p(w.OWN), {"command": "agent.rename", "agent_id": agent, "name": "Clawdia"})
    assert types(logged) == ["agent.updated"]
    assert (logged[0]["name"], logged[0]["name_by"]) == ("Clawdia", w.OWN)
    assert register(w, key="a", name="Other") == []
    assert w.state.participants[agent].name == "Clawdia"


def test_who_may_rename_an_agent(w: World) -> None:
    agent = new_agent(w, "a", "OpenClaw")
    rename = {"command": "agent.rename", "agent_id": agent, "name": "X"}
    says_no(w, w.p(w.MEM), rename, "forbidden", "renamed by someone in its room")
    says_no(w, w.h(w.H1), rename, "forbidden", "a person renames an agent")
    w.ok(w.p(w.OWN), added(w.room, agent))
    w.ok(w.p(w.MEM), rename)  # Maya is in a room with it now
    says_no(
        w,
        w.p(w.OWN),
        {"command": "agent.rename", "agent_id": agent, "name": "ledger"},
        "invalid_event",
        "is called ledger already",
    )


def test_the_main_agent_lives_in_the_harness_home(w: World) -> None:
    logged = register(w, key="main", name="Scout", lead=True)
    assert types(logged) == ["agent.registered", "membership.added", "agent.attached"]
    main = logged[0]
    assert (main["main"], main["space_id"], main["name"]) == (True, w.home, "Scout 2")
    assert w.state.room_of_agent(main["agent_id"]) == w.home
    # The harness was in its home already: no row of standing agents for it.
    assert w.state.standing(w.home, w.H1) == "member"
    says_no(
        w,
        w.h(w.H1),
        {"command": "agent.register", "harness_id": w.H1, "key": "m2", "name": "M", "lead": True},
        "invalid_event",
        "Main agent already",
    )


def test_lead_room_refusals(w: World) -> None:
    main = new_agent(w, "main", "Lead", lead=True)
    other = new_agent(w, "o", "Other")
    # Added elsewhere, moved, attached elsewhere.
    says_no(w, w.p(w.OWN), added(w.room, main), "lead_room", "stays in its Main room")
    says_no(w, w.p(w.OWN), move(main, w.room), "lead_room", "stays in its Main room")
    says_no(w, w.h(w.H1), attach(main, w.room), "lead_room", "stays in its Main room")
    # Taken out, archived, replaced by attach.
    says_no(w, w.p(w.OWN), removed(w.home, main), "lead_room", "stays in its Main room")
    says_no(
        w,
        w.h(w.H1),
        {
            "command": "agent.register",
            "harness_id": w.H1,
            "key": "main",
            "name": "Lead",
            "state": "archived",
        },
        "lead_room",
        "not archived",
    )
    says_no(w, w.h(w.H1), attach(other, w.home, replacing=main), "lead_room", "not replaced")
    # The Main room takes people and no other agent, nor another harness.
    says_no(w, w.p(w.OWN), added(w.home, other), "lead_room", "takes people and no other agent")
    says_no(w, w.p(w.OWN), added(w.home, w.H2), "lead_room", "takes people and no other agent")
    w.ok(w.p(w.OWN), added(w.home, w.MEM))  # people are welcome


def test_a_main_agent_is_not_archived_at_birth(w: World) -> None:
    says_no(
        w,
        w.h(w.H1),
        {
            "command": "agent.register",
            "harness_id": w.H1,
            "key": "m",
            "name": "M",
            "lead": True,
            "state": "archived",
        },
        "lead_room",
        "not archived",
    )


# --- a person adding, taking out, moving ----------------------------------------------------


def test_a_person_adds_an_agent_with_its_harness_standing_behind_it(w: World) -> None:
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    room = group(w, [w.MEM])
    logged = w.ok(w.p(w.OWN), added(room, agent))
    assert types(logged) == ["membership.added", "membership.added", "agent.attached"]
    assert (logged[0]["participant_id"], logged[0]["standing"]) == (w.H2, "agents")
    assert logged[1]["participant_id"] == agent
    attached = logged[2]
    assert (attached["space_id"], attached["agent_id"], attached["harness_id"]) == (
        room,
        agent,
        w.H2,
    )
    assert "catch_up" not in attached
    # A harness already in the room in its own right is not added again.
    second = new_agent(w, "b", "Ob", harness_id=w.H2)
    assert types(w.ok(w.p(w.OWN), added(w.room, second))) == ["membership.added", "agent.attached"]
    assert w.state.standing(w.room, w.H2) == "member"


def test_agent_elsewhere_names_its_room(w: World) -> None:
    agent = new_agent(w, "a", "Oc")
    w.ok(w.p(w.OWN), added(w.room, agent))
    refusal = says_no(w, w.p(w.OWN), added(w.other, agent), "agent_elsewhere", "move it")
    assert refusal.data == {"space_id": w.room}
    assert refusal.field == "space_id"


def test_standing_agents_is_the_doors_alone(w: World) -> None:
    room = group(w, [w.MEM])
    says_no(w, w.p(w.OWN), added(room, w.H2, standing="agents"), "invalid_event", "Chips itself")
    agent = new_agent(w, "a", "Oc")
    says_no(w, w.p(w.OWN), added(room, agent, standing="guest"), "invalid_event", "a member")


def test_room_closed(w: World) -> None:
    agent = new_agent(w, "a", "Oc")
    room = group(w, [w.MEM])
    w.ok(w.p(w.OWN), {"type": "space.updated", "space_id": room, "state": "closed"})
    says_no(w, w.p(w.OWN), added(room, agent), "room_closed", "unarchive it")


def test_two_adds_in_one_batch_leave_it_in_one_room(w: World) -> None:
    """Two people's adds that race are decided one after the other at the door."""
    agent = new_agent(w, "a", "Oc")
    a, b = group(w, [w.MEM], "A"), group(w, [w.MEM], "B")
    door = Door(w.state, w.now)

    def request(space_id: str, key: str) -> AppendRequest:
        return AppendRequest(
            request_id=key,
            workspace_id=w.state.workspace_id,
            credential_id="crd_x",
            actor=w.p(w.OWN),
            idempotency_key=key,
            events=[added(space_id, agent)],
        )

    door.append(request(a, "r1"))
    with pytest.raises(Refused) as caught:
        door.append(request(b, "r2"))
    assert caught.value.code == "agent_elsewhere"
    assert w.state.room_of_agent(agent) == a


def test_taking_an_agent_out_cancels_its_runs_first(w: World) -> None:
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    room = group(w, [w.MEM])
    w.ok(w.p(w.OWN), added(room, agent))
    w.run("run_9", room, who=w.H2)  # the harness's run, its only agent there
    logged = w.ok(w.p(w.OWN), removed(room, agent))
    assert types(logged) == [
        "run.cancel",
        "agent.released",
        "membership.removed",
        "membership.removed",
    ]
    assert logged[0]["run_id"] == "run_9"
    assert (logged[1]["reason"], logged[1]["agent_id"]) == ("removed", agent)
    assert logged[2]["participant_id"] == agent and "standing" not in logged[2]
    # It stood there only behind its agent, and its leave says so (it draws no line).
    assert (logged[3]["participant_id"], logged[3]["standing"]) == (w.H2, "agents")
    assert w.state.standing(room, w.H2) is None
    assert w.state.room_of_agent(agent) is None


def test_a_harness_row_of_standing_agents_is_not_taken_out_itself(w: World) -> None:
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    room = group(w, [w.MEM])
    w.ok(w.p(w.OWN), added(room, agent))
    says_no(w, w.p(w.OWN), removed(room, w.H2), "invalid_event", "only behind its agents")
    # Nor is a leave marked as one from behind by anybody but Chips.
    marked = {**removed(room, w.MEM), "standing": "agents"}
    says_no(w, w.p(w.MEM), marked, "invalid_event", "written by Chips itself")


def test_taking_a_harness_out_takes_its_agents_with_it(w: World) -> None:
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    w.run("run_9", w.room, who=w.H2)  # its own, begun before any agent of its was here
    w.ok(w.p(w.OWN), added(w.room, agent))
    logged = w.ok(w.p(w.OWN), removed(w.room, w.H2))
    assert types(logged) == [
        "agent.released",
        "membership.removed",
        "run.cancel",
        "membership.removed",
    ]
    assert logged[1]["participant_id"] == agent and logged[3]["participant_id"] == w.H2
    assert w.state.room_of_agent(agent) is None and w.state.standing(w.room, w.H2) is None


def test_a_person_moves_an_agent(w: World) -> None:
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    a, b = group(w, [w.MEM], "A"), group(w, [w.MEM], "B")
    w.ok(w.p(w.OWN), added(a, agent))
    logged = w.ok(w.p(w.OWN), move(agent, b))
    assert types(logged) == [
        "agent.released",
        "membership.removed",
        "membership.removed",
        "membership.added",
        "membership.added",
        "agent.attached",
    ]
    assert (logged[0]["reason"], logged[0]["moved_to"]) == ("moved", b)
    assert w.state.room_of_agent(agent) == b
    says_no(w, w.p(w.GST), move(agent, w.room), "forbidden", "guest")
    says_no(w, w.p(w.OUT), move(agent, a), "forbidden", "not a member")


# --- archive, unarchive, delete -------------------------------------------------------------


def test_archiving_a_room_releases_its_agents_and_unarchiving_brings_them_back(w: World) -> None:
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    room = group(w, [w.MEM])
    w.ok(w.p(w.OWN), added(room, agent))
    w.run("run_9", room, who=w.H2)
    logged = w.ok(w.p(w.OWN), {"type": "space.updated", "space_id": room, "state": "closed"})
    assert types(logged) == [
        "run.cancel",
        "agent.released",
        "membership.removed",
        "membership.removed",
        "space.updated",
    ]
    assert logged[1]["reason"] == "archived"
    assert w.state.room_of_agent(agent) is None
    back = w.ok(w.p(w.OWN), {"type": "space.updated", "space_id": room, "state": "open"})
    assert types(back) == [
        "space.updated",
        "membership.added",
        "membership.added",
        "agent.attached",
    ]
    assert w.state.room_of_agent(agent) == room


def test_an_agent_that_found_another_room_is_not_brought_back(w: World) -> None:
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    a, b = group(w, [w.MEM], "A"), group(w, [w.MEM], "B")
    w.ok(w.p(w.OWN), added(a, agent))
    w.ok(w.p(w.OWN), {"type": "space.updated", "space_id": a, "state": "closed"})
    w.ok(w.p(w.OWN), added(b, agent))
    back = w.ok(w.p(w.OWN), {"type": "space.updated", "space_id": a, "state": "open"})
    assert types(back) == ["space.updated"]
    assert w.state.room_of_agent(agent) == b


def test_deleting_a_room_releases_its_agents_and_their_release_outlives_it(w: World) -> None:
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    room = group(w, [w.MEM])
    w.ok(w.p(w.OWN), added(room, agent))
    door = Door(w.state, w.now)
    req = AppendRequest(
        request_id="r",
        workspace_id=w.state.workspace_id,
        credential_id="crd_x",
        actor=w.p(w.OWN),
        idempotency_key="del",
        events=[{"type": "space.erased", "space_id": room}],
    )
    logged = door.append(req)
    assert types(logged) == ["agent.released", "space.erased"]
    assert logged[0]["reason"] == "deleted"
    assert logged[0]["seq"] in door.spared
    assert w.state.room_of_agent(agent) is None


def erase(w: World, who: str, room: str) -> list[dict[str, Any]]:
    door = Door(w.state, w.now)
    req = AppendRequest(
        request_id="r",
        workspace_id=w.state.workspace_id,
        credential_id="crd_x",
        actor=w.p(who),
        idempotency_key=f"del-{room}",
        events=[{"type": "space.erased", "space_id": room}],
    )
    logged: list[dict[str, Any]] = door.append(req)
    return logged


def test_deleting_a_followed_room_as_the_harness_s_owner_archives_its_agents(w: World) -> None:
    """Scout follows rooms (follows_rooms) and Arjun owns it: his delete deletes Scout's
    side too, so its agent there is released with delete and archived. Ada's delete
    archives Scout's side instead, and the agent is only released."""
    agent = new_agent(w, "a", "Oc")
    room = group(w, [w.MEM])
    w.ok(w.p(w.OWN), added(room, agent))
    logged = erase(w, w.OWN, room)
    assert types(logged) == ["agent.released", "agent.updated", "space.erased"]
    assert (logged[0]["reason"], logged[0]["delete"]) == ("deleted", True)
    assert (logged[1]["agent_id"], logged[1]["state"]) == (agent, "archived")
    assert logged[2]["follows"] == [{"harness_id": w.H1, "delete": True}]
    assert w.state.participants[agent].agent.state == "archived"
    assert w.state.room_of_agent(agent) is None

    other = new_agent(w, "b", "Ob")
    room = group(w, [w.MEM, w.ADM])
    w.ok(w.p(w.OWN), added(room, other))
    logged = erase(w, w.ADM, room)
    assert types(logged) == ["agent.released", "space.erased"]
    assert logged[0].get("delete") is None
    assert w.state.participants[other].agent.state == "active"


def test_archiving_an_agent_releases_it_and_closes_a_room_it_was_alone_in(w: World) -> None:
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    room = group(w, [w.MEM])
    w.ok(w.p(w.OWN), added(room, agent))
    w.run("run_9", room, who=w.H2)
    logged = register(w, w.H2, key="a", name="Oc", state="archived")
    assert types(logged) == [
        "run.cancel",
        "agent.released",
        "membership.removed",
        "membership.removed",
        "space.updated",
        "agent.updated",
    ]
    assert logged[1]["reason"] == "agent_archived"
    assert logged[4]["state"] == "closed"
    assert logged[5]["state"] == "archived"
    assert w.state.spaces[room].state == "closed"
    says_no(w, w.p(w.OWN), added(w.room, agent), "invalid_event", "archived")
    back = register(w, w.H2, key="a", name="Oc")
    assert types(back) == [
        "agent.updated",
        "space.updated",
        "membership.added",
        "membership.added",
        "agent.attached",
    ]
    assert w.state.spaces[room].state == "open"
    assert w.state.room_of_agent(agent) == room


def test_an_agent_archived_beside_others_leaves_the_room_open(w: World) -> None:
    one = new_agent(w, "a", "Oc", harness_id=w.H2)
    two = new_agent(w, "b", "Ob", harness_id=w.H2)
    room = group(w, [w.MEM])
    w.ok(w.p(w.OWN), added(room, one))
    w.ok(w.p(w.OWN), added(room, two))
    logged = register(w, w.H2, key="a", name="Oc", state="archived")
    assert types(logged) == ["agent.released", "membership.removed", "agent.updated"]
    assert w.state.spaces[room].state == "open"
    assert w.state.standing(room, w.H2) == "agents"


# --- attach ---------------------------------------------------------------------------------


def test_attach_replaces_another_agent_of_the_harness(w: World) -> None:
    one = new_agent(w, "a", "Oc", harness_id=w.H2)
    two = new_agent(w, "b", "Ob", harness_id=w.H2)
    room = group(w, [w.MEM])
    w.ok(w.p(w.OWN), added(room, one))
    logged = w.ok(w.h(w.H2), attach(two, room, replacing=one))
    assert types(logged) == [
        "membership.added",
        "agent.attached",
        "membership.replaced",
        "agent.released",
        "membership.removed",
    ]
    assert logged[1]["replacing"] == one
    assert (logged[2]["participant_id"], logged[2]["replaced"]) == (two, one)
    assert logged[3]["agent_id"] == one
    assert w.state.room_of_agent(two) == room and w.state.room_of_agent(one) is None
    assert w.state.standing(room, w.H2) == "agents"


def test_attach_in_the_harness_own_place(w: World) -> None:
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    logged = w.ok(w.h(w.H2), attach(agent, w.room, replacing=w.H2))
    assert types(logged) == ["membership.added", "agent.attached", "membership.replaced"]
    assert w.state.standing(w.room, w.H2) == "agents"


def test_attach_moves_an_agent_out_of_its_room_first(w: World) -> None:
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    a = group(w, [w.MEM, w.H2], "A")
    w.ok(w.p(w.OWN), added(a, agent))
    logged = w.ok(w.h(w.H2), attach(agent, w.room))
    assert types(logged) == [
        "agent.released",
        "membership.removed",
        "membership.added",
        "agent.attached",
    ]
    assert (logged[0]["reason"], logged[0]["moved_to"]) == ("moved", w.room)


def test_attach_refusals(w: World) -> None:
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    mine = new_agent(w, "b", "Ob", harness_id=w.H1)
    room = group(w, [w.MEM])
    says_no(w, w.h(w.H2), attach(agent, room), "forbidden", "not in that room")
    says_no(w, w.h(w.H2), attach(mine, w.room), "forbidden", "another harness's agent")
    says_no(w, w.p(w.OWN), attach(agent, w.room), "forbidden", "a harness attaches")
    says_no(w, w.h(w.H2), attach(agent, w.room, replacing=mine), "not_found", "replacing")
    w.ok(w.p(w.OWN), {"type": "space.updated", "space_id": w.other, "state": "closed"})
    says_no(w, w.h(w.H1), attach(mine, w.other), "room_closed", "unarchive")


# --- forks and new agents -------------------------------------------------------------------


def declare(w: World, *caps: str) -> None:
    w.ok(
        w.p(w.OWN),
        {"type": "harness.declared", "harness_id": w.H2, "capabilities": list(caps)},
    )


def test_a_forks_copy_joins_the_room_in_time(w: World) -> None:
    declare(w, "forks")
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    asked = w.ok(w.p(w.OWN), {"type": "agent.fork", "space_id": w.room, "agent_id": agent})[0]
    logged = register(w, w.H2, key="copy", name="Oc copy", forked_from=agent, space_id=w.room)
    assert types(logged) == ["agent.registered", "membership.added", "agent.attached"]
    assert logged[0]["fork_of"] == asked["id"] and logged[0]["space_id"] == w.room
    assert logged[2]["fork_of"] == asked["id"]


def test_a_copy_made_after_a_minute_is_free_and_says_why(w: World) -> None:
    declare(w, "forks")
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    w.ok(w.p(w.OWN), {"type": "agent.fork", "space_id": w.room, "agent_id": agent})
    w.now = w.now + ASK_WAIT + timedelta(seconds=1)
    logged = register(w, w.H2, key="copy", name="Oc copy", forked_from=agent, space_id=w.room)
    assert types(logged) == ["agent.registered"]
    copy = w.state.participants[logged[0]["agent_id"]]
    assert copy.agent is not None and "more than a minute" in (copy.agent.why or "")


def test_a_copy_for_a_room_archived_meanwhile_is_free_and_says_why(w: World) -> None:
    """A fork's copy enters its room by the one rule: archived since the ask, the room
    takes no agent, so the copy is registered free."""
    declare(w, "forks")
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    room = group(w, [w.MEM])
    w.ok(w.p(w.OWN), {"type": "agent.fork", "space_id": room, "agent_id": agent})
    w.ok(w.p(w.OWN), {"type": "space.updated", "space_id": room, "state": "closed"})
    logged = register(w, w.H2, key="copy", name="Oc copy", forked_from=agent, space_id=room)
    assert types(logged) == ["agent.registered"]
    copy = w.state.participants[logged[0]["agent_id"]]
    assert copy.agent is not None and "could not join" in (copy.agent.why or "")
    assert "archived" in (copy.agent.why or "")
    assert w.state.room_of_agent(copy.id) is None


def test_a_new_agent_made_for_an_ask_joins_its_room(w: World) -> None:
    declare(w, "new_agents")
    asked = w.ok(
        w.p(w.OWN), {"type": "agent.asked", "space_id": w.room, "harness_id": w.H2, "name": "J"}
    )[0]
    assert asked["by"] == w.OWN  # who asked, whatever the client wrote
    forged = w.ok(
        w.p(w.OWN),
        {"type": "agent.asked", "space_id": w.room, "harness_id": w.H2, "by": w.H2},
    )[0]
    assert forged["by"] == w.OWN
    logged = register(w, w.H2, key="j", name="J", made_for=asked["id"], space_id=w.room)
    assert types(logged) == ["agent.registered", "membership.added", "agent.attached"]
    assert logged[2]["made_for"] == asked["id"]
    # The same ask answered again: the second is free.
    again = register(w, w.H2, key="j2", name="J", made_for=asked["id"])
    assert types(again) == ["agent.registered"]
    says_no(
        w,
        w.h(w.H2),
        {
            "command": "agent.register",
            "harness_id": w.H2,
            "key": "x",
            "name": "X",
            "made_for": "evt_none",
        },
        "not_found",
        "made_for",
    )


# --- free agents' words ---------------------------------------------------------------------


def test_what_a_free_agent_says_is_held_and_posted_on_its_next_join(w: World) -> None:
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    room = group(w, [w.MEM])
    w.ok(w.p(w.OWN), added(room, agent))
    w.ok(w.p(w.OWN), removed(room, agent))
    me = as_agent(w, agent)
    first = w.ok(me, {"type": "message.post", "text": "one"})
    assert types(first) == ["message.held"]
    assert (first[0]["left_space_id"], first[0]["text"]) == (room, "one")
    # Naming the room it left is held too.
    assert types(w.ok(me, {"type": "message.post", "space_id": room, "text": "two"})) == [
        "message.held"
    ]
    logged = w.ok(w.p(w.OWN), added(w.room, agent))
    assert types(logged) == ["membership.added", "agent.attached", "message.post", "message.post"]
    posts = logged[2:]
    assert [p["text"] for p in posts] == ["one", "two"]
    assert all(p["space_id"] == w.room and p["actor"]["id"] == agent for p in posts)
    assert all("held_since" in p for p in posts)
    assert w.state.held == {}


def test_an_agent_that_never_was_in_a_room_opens_one_with_the_owner(w: World) -> None:
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    logged = w.ok(as_agent(w, agent), {"type": "message.post", "text": "hello"})
    assert types(logged) == ["space.created", "membership.added", "agent.attached", "message.post"]
    space_id = logged[0]["space_id"]
    assert logged[0]["opened_for"] == w.OWN
    assert w.state.standing(space_id, w.OWN) == "owner"
    assert w.state.standing(space_id, w.H2) == "agents"
    assert w.state.room_of_agent(agent) == space_id
    assert logged[3]["space_id"] == space_id


def test_an_agent_in_a_room_says_a_roomless_post_there(w: World) -> None:
    agent = new_agent(w, "a", "Oc", harness_id=w.H2)
    w.ok(w.p(w.OWN), added(w.room, agent))
    logged = w.ok(as_agent(w, agent), {"type": "message.post", "text": "here"})
    assert types(logged) == ["message.post"] and logged[0]["space_id"] == w.room


def test_a_person_post_naming_no_room_is_refused(w: World) -> None:
    says_no(w, w.p(w.OWN), {"type": "message.post", "text": "x"}, "invalid_event", "space_id")


def test_held_since_is_chips_own(w: World) -> None:
    says_no(
        w,
        w.p(w.OWN),
        {
            "type": "message.post",
            "space_id": w.room,
            "text": "x",
            "held_since": "2026-01-01T00:00:00Z",
        },
        "invalid_event",
        "held_since",
    )
