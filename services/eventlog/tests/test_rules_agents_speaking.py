"""Speaking as an agent at the door (rules/common.py check_speaker, docs/adr/0070).

docs/product/websocket.md, Agents, Speaking as one: "Name it as the envelope's actor … Chips checks
it is yours and writes your harness beside it. A harness that sends as itself is read as
its one agent in the room; where it has several there, the event is refused with
which_agent until it names one." Runs, cards and lanes stay the harness's.

The agents are put in the door state directly (as registering and attaching will put
them), with their harness behind them in the room at standing ``agents``.
"""

from __future__ import annotations

from typing import Any

import pytest

from chips_common.append import Actor
from chips_eventlog.state import AddMember, AddOpener, AgentFacts, Participant, PutParticipant

pytestmark = pytest.mark.unit

J1, J2, OC = "agt_j1", "agt_j2", "agt_oc"


def agent(aid: str, harness_id: str) -> Actor:
    return Actor(kind="agent", id=aid, harness_id=harness_id)


def put_agent(w: Any, aid: str, name: str, harness_id: str, state: str = "active") -> None:
    p = Participant(
        aid, "agent", "member", harness_id, name, w.state.head_seq, agent=AgentFacts(aid, state)
    )
    w.state.apply([PutParticipant(p)])
    w.state.settle(w.state.head_seq, [])


def enter(w: Any, space_id: str, *aids: str) -> None:
    """Agents come into a room, each harness behind its own at standing ``agents``."""
    changes = []
    for aid in aids:
        harness = w.state.participant(aid).owner_id
        if w.state.standing(space_id, harness) is None:
            changes.append(AddMember(space_id, harness, "agents", w.state.head_seq))
        changes.append(AddMember(space_id, aid, "member", w.state.head_seq))
    w.state.apply(changes)
    w.state.settle(w.state.head_seq, [])


@pytest.fixture
def a(w: Any) -> Any:
    """Scout's agents J1 and J2 and Ledger's agent Oc; ``w.pair`` holds Arjun, Maya, J1
    and J2 (Scout behind them); ``w.solo`` Arjun and Oc (Ledger behind it)."""
    put_agent(w, J1, "J1", w.H1)
    put_agent(w, J2, "J2", w.H1)
    put_agent(w, OC, "Oc", w.H2)
    w.pair = w.space(w.OWN, [w.MEM], title="Pair")
    enter(w, w.pair, J1, J2)
    w.solo = w.space(w.OWN, [], title="Solo")
    enter(w, w.solo, OC)
    return w


def post(space_id: str, text: str = "hello", **fields: Any) -> dict[str, Any]:
    return {"type": "message.post", "space_id": space_id, "text": text, **fields}


def started(space_id: str, run_id: str = "run_a") -> dict[str, Any]:
    return {"type": "run.started", "run_id": run_id, "space_id": space_id, "goal": "g"}


# --- who speaks -------------------------------------------------------------------------


def test_an_agent_speaks_with_its_harness_beside_it(a: Any) -> None:
    logged = a.ok(agent(J1, a.H1), post(a.pair))[0]
    assert logged["actor"] == {"kind": "agent", "id": J1, "harness_id": a.H1}


def test_another_harness_s_agent_is_forbidden(a: Any) -> None:
    a.says_no(agent(J1, a.H2), post(a.pair), "forbidden", "another harness's agent")


def test_an_agent_nobody_registered_is_not_found(a: Any) -> None:
    a.says_no(agent("agt_nobody", a.H1), post(a.pair), "not_found", "no agent agt_nobody")


def test_an_archived_agent_does_not_speak(a: Any) -> None:
    put_agent(a, "agt_old", "Old", a.H1, state="archived")
    a.says_no(agent("agt_old", a.H1), post(a.pair), "forbidden", "archived")


def test_an_agent_speaks_only_in_its_own_room(a: Any) -> None:
    """The agent's own membership decides, not its harness's."""
    a.says_no(agent(J1, a.H1), post(a.room), "forbidden", "not a member")


def test_a_harness_as_itself_is_its_one_agent_in_the_room(a: Any) -> None:
    logged = a.ok(a.h(a.H2), post(a.solo))[0]
    assert logged["actor"] == {"kind": "agent", "id": OC, "harness_id": a.H2}


def test_a_harness_with_several_agents_in_the_room_names_one(a: Any) -> None:
    a.says_no(a.h(a.H1), post(a.pair), "which_agent", "2 of your agents are in this room")


def test_a_harness_that_is_a_member_itself_speaks_as_itself(a: Any) -> None:
    logged = a.ok(a.h(a.H1), post(a.room))[0]
    assert logged["actor"] == {"kind": "harness", "id": a.H1}


def test_a_member_harness_beside_its_one_agent_is_that_agent(a: Any) -> None:
    """The room shows a member harness as its agents there (as_shown), so its words are
    theirs: beside one agent it is that agent (docs/adr/0096)."""
    a.ok(a.p(a.OWN), {"type": "membership.removed", "space_id": a.solo, "participant_id": OC})
    a.ok(a.p(a.OWN), {"type": "membership.added", "space_id": a.room, "participant_id": OC})
    logged = a.ok(a.h(a.H2), post(a.room))[0]
    assert logged["actor"] == {"kind": "agent", "id": OC, "harness_id": a.H2}
    assert a.state.standing(a.room, a.H2) == "member"  # still a member itself


def test_a_member_harness_beside_several_of_its_agents_names_one(a: Any) -> None:
    a.ok(a.p(a.OWN), {"type": "harness.declared", "harness_id": a.H1, "capabilities": ["agents"]})
    for aid in (J1, J2):
        a.ok(a.p(a.OWN), {"type": "membership.removed", "space_id": a.pair, "participant_id": aid})
        a.ok(a.p(a.OWN), {"type": "membership.added", "space_id": a.room, "participant_id": aid})
    a.says_no(a.h(a.H1), post(a.room), "which_agent", "2 of your agents are in this room")


def test_a_harness_before_agents_beside_several_of_them_speaks_as_itself(a: Any) -> None:
    """It cannot name an agent, so it is not asked to: it speaks as itself, as before."""
    for aid in (J1, J2):
        a.ok(a.p(a.OWN), {"type": "membership.removed", "space_id": a.pair, "participant_id": aid})
        a.ok(a.p(a.OWN), {"type": "membership.added", "space_id": a.room, "participant_id": aid})
    logged = a.ok(a.h(a.H1), post(a.room))[0]
    assert logged["actor"] == {"kind": "harness", "id": a.H1}


def test_a_person_is_never_read_as_anybody_else(a: Any) -> None:
    logged = a.ok(a.p(a.MEM), post(a.pair))[0]
    assert logged["actor"] == {"kind": "person", "id": a.MEM}


# --- runs are the harness's -------------------------------------------------------------


def test_an_agent_s_run_is_its_harness_s(a: Any) -> None:
    a.ok(agent(J1, a.H1), started(a.pair))
    run = a.state.run("run_a")
    assert (run.harness_id, run.agent_id) == (a.H1, J1)


def test_the_harness_as_itself_on_an_agent_s_run_is_that_agent(a: Any) -> None:
    """No which_agent for a run's events: the run says whose turn it is."""
    a.ok(agent(J1, a.H1), started(a.pair))
    step = {"type": "step.log", "run_id": "run_a", "step_id": "s1", "status": "done"}
    logged = a.ok(a.h(a.H1), step)[0]
    assert logged["actor"] == {"kind": "agent", "id": J1, "harness_id": a.H1}


def test_another_agent_of_the_same_harness_writes_on_the_run(a: Any) -> None:
    a.ok(agent(J1, a.H1), started(a.pair))
    a.ok(agent(J2, a.H1), {"type": "run.completed", "run_id": "run_a", "summary": "done"})
    assert a.state.run("run_a").state == "completed"


def test_another_harness_s_agent_may_not_write_on_the_run(a: Any) -> None:
    a.ok(agent(J1, a.H1), started(a.pair))
    step = {"type": "step.log", "run_id": "run_a", "step_id": "s1", "status": "done"}
    a.says_no(agent(OC, a.H2), step, "forbidden", "another harness's run")


def test_a_reply_on_an_agent_s_run_is_said_by_that_agent(a: Any) -> None:
    a.ok(agent(J2, a.H1), started(a.pair, "run_b"))
    logged = a.ok(a.h(a.H1), {"type": "message.post", "run_id": "run_b", "text": "done"})[0]
    assert logged["actor"]["id"] == J2
    assert logged["space_id"] == a.pair


def test_an_agent_answers_its_harness_s_question_card(a: Any) -> None:
    a.ok(agent(J1, a.H1), started(a.pair))
    ask = {
        "type": "question.ask",
        "run_id": "run_a",
        "question_id": "q1",
        "prompt": "Which?",
        "options": [{"value": "a", "label": "A"}],
    }
    a.ok(agent(J1, a.H1), ask)
    a.ok(agent(J2, a.H1), {"type": "question.answered", "question_id": "q1", "value": "a"})


def test_an_agent_posts_the_cards_a_harness_posts(a: Any) -> None:
    status = {"phase": "p", "verb": "v"}
    logged = a.ok(agent(J1, a.H1), post(a.pair, kind="status", status=status))[0]
    assert logged["kind"] == "status"


def test_an_agent_passes_its_turn(a: Any) -> None:
    logged = a.ok(agent(J1, a.H1), post(a.pair, "NO_REPLY"))[0]
    assert logged["type"] == "turn.passed"
    assert logged["actor"]["id"] == J1


# --- who is in the room, and who a message is for ----------------------------------------


def test_the_room_shows_agents_and_not_the_harness_behind_them(a: Any) -> None:
    shown = {m.id: m for m in a.state.room_members(a.pair)}
    assert set(shown) == {a.OWN, a.MEM, J1, J2}
    assert (shown[J1].kind, shown[J1].harness_id, shown[J1].harness) == ("agent", a.H1, "Scout")


def test_a_mention_of_an_agent_is_for_that_agent(a: Any) -> None:
    logged = a.ok(a.p(a.MEM), post(a.pair, "@J2 can you look?"))[0]
    assert (logged["addressed_to"], logged["mentions"]) == ([J2], [J2])


def test_a_person_s_message_is_for_every_agent_before_any_choice(a: Any) -> None:
    logged = a.ok(a.p(a.MEM), post(a.pair, "morning all"))[0]
    assert logged["addressed_to"] == [J1, J2]


def test_the_harness_s_name_reaches_its_one_agent(a: Any) -> None:
    logged = a.ok(a.p(a.OWN), post(a.solo, "@Ledger what is the total?"))[0]
    assert logged["addressed_to"] == [OC]


def test_the_harness_s_name_reaches_none_of_several(a: Any) -> None:
    logged = a.ok(a.p(a.MEM), post(a.pair, "@Scout anyone?", to=[J1]))[0]
    assert logged["mentions"] == []
    assert logged["addressed_to"] == [J1]


def test_one_agent_hands_over_to_another_of_its_harness(a: Any) -> None:
    logged = a.ok(agent(J1, a.H1), post(a.pair, "@J2 over to you"))[0]
    assert logged["addressed_to"] == [J2]


def test_an_agent_s_words_to_nobody_are_for_the_people(a: Any) -> None:
    logged = a.ok(agent(J1, a.H1), post(a.pair, "Done."))[0]
    assert logged["addressed_to"] == []


def test_a_reply_to_an_agent_is_that_agent_s(a: Any) -> None:
    said = a.ok(agent(J2, a.H1), post(a.pair, "Here it is."))[0]["message_id"]
    logged = a.ok(a.p(a.MEM), post(a.pair, "thanks", reply_to=said))[0]
    assert logged["addressed_to"] == [J2]


# --- message.heard ----------------------------------------------------------------------


def heard(message_id: str, run_id: str = "run_a") -> dict[str, Any]:
    return {"type": "message.heard", "run_id": run_id, "message_id": message_id}


def test_a_turn_says_it_heard_words_said_in_its_room(a: Any) -> None:
    a.ok(agent(J1, a.H1), started(a.pair))
    said = a.ok(a.p(a.MEM), post(a.pair, "@J2 and the totals?"))[0]["message_id"]
    logged = a.ok(agent(J1, a.H1), heard(said))[0]
    assert (logged["space_id"], logged["actor"]["id"]) == (a.pair, J1)


def test_the_harness_as_itself_says_it_for_the_run_s_agent(a: Any) -> None:
    a.ok(agent(J1, a.H1), started(a.pair))
    said = a.ok(a.p(a.MEM), post(a.pair, "@J2 and the totals?"))[0]["message_id"]
    assert a.ok(a.h(a.H1), heard(said))[0]["actor"]["id"] == J1


def test_only_the_run_s_agent_heard_it(a: Any) -> None:
    a.ok(agent(J1, a.H1), started(a.pair))
    said = a.ok(a.p(a.MEM), post(a.pair, "@J2 and the totals?"))[0]["message_id"]
    a.says_no(agent(J2, a.H1), heard(said), "forbidden", "run_a is J1's turn")


def test_a_message_of_another_room_was_not_heard_there(a: Any) -> None:
    a.ok(agent(J1, a.H1), started(a.pair))
    a.says_no(agent(J1, a.H1), heard(a.said_by_maya), "not_found", "no message standing")


def test_a_turn_that_ended_hears_nothing(a: Any) -> None:
    a.ok(agent(J1, a.H1), started(a.pair))
    said = a.ok(a.p(a.MEM), post(a.pair, "@J2 and the totals?"))[0]["message_id"]
    a.ok(agent(J1, a.H1), {"type": "run.completed", "run_id": "run_a"})
    a.says_no(agent(J1, a.H1), heard(said), "invalid_event", "has ended")


def test_another_harness_hears_nothing_on_the_run(a: Any) -> None:
    a.ok(agent(J1, a.H1), started(a.pair))
    said = a.ok(a.p(a.MEM), post(a.pair, "@J2 and the totals?"))[0]["message_id"]
    a.says_no(agent(OC, a.H2), heard(said), "forbidden", "another harness's run")


def test_feedback_on_an_agent_s_words_names_its_harness(a: Any) -> None:
    said = a.ok(agent(J1, a.H1), post(a.pair, "the total is 42"))[0]["message_id"]
    fix = {
        "type": "feedback",
        "space_id": a.pair,
        "message_id": said,
        "kind": "correction",
        "note": "it is 41",
    }
    logged = a.ok(a.p(a.MEM), fix)[0]
    assert (logged["about"], logged["harness_id"]) == (J1, a.H1)


def test_a_harness_retitles_a_room_it_opened_as_itself(a: Any) -> None:
    """Room operations are the harness's, however many of its agents are there."""
    a.state.apply([AddOpener(a.pair, a.H1, a.state.head_seq)])
    a.state.settle(a.state.head_seq, [])
    logged = a.ok(a.h(a.H1), {"type": "space.updated", "space_id": a.pair, "title": "J room"})[0]
    assert logged["actor"] == {"kind": "harness", "id": a.H1}
