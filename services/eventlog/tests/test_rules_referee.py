"""Who may set the referee, a room's spend ceiling and its pause (rules/referee.py)."""

from __future__ import annotations

from typing import Any

import pytest

from chips_common.append import Actor

pytestmark = pytest.mark.unit

SYSTEM = Actor(kind="system", id="system")


def test_an_owner_or_admin_sets_the_referee_and_a_member_may_not(w: Any) -> None:
    w.ok(w.p(w.ADM), {"type": "workspace.referee_set", "stop": 10, "hold": "never"})
    w.says_no(w.p(w.MEM), {"type": "workspace.referee_set", "stop": 10}, "forbidden", "owner")
    w.says_no(w.h(w.H1), {"type": "workspace.referee_set"}, "forbidden", "owner")


def test_a_person_in_the_room_sets_its_ceiling_within_range(w: Any) -> None:
    logged = w.ok(w.p(w.MEM), {"type": "space.spend_ceiling_set", "space_id": w.room, "usd": 5})
    assert logged[0]["usd"] == 5
    w.ok(w.p(w.MEM), {"type": "space.spend_ceiling_set", "space_id": w.room})
    event = {"type": "space.spend_ceiling_set", "space_id": w.room, "usd": 0.1}
    w.says_no(w.p(w.MEM), event, "invalid_event", "$0.25 to $100")
    event = {"type": "space.spend_ceiling_set", "space_id": w.room, "usd": 5}
    w.says_no(w.h(w.H1), event, "forbidden", "person")
    w.says_no(w.p(w.OUT), event, "forbidden", "not a member")


def test_a_person_pauses_and_lets_carry_on_and_a_harness_may_not(w: Any) -> None:
    logged = w.ok(w.p(w.MEM), {"type": "exchange.set", "space_id": w.room, "state": "paused"})
    assert logged[0]["why"] == "person"
    w.ok(w.p(w.MEM), {"type": "exchange.set", "space_id": w.room, "state": "running"})
    event = {"type": "exchange.set", "space_id": w.room, "state": "running"}
    w.says_no(w.h(w.H1), event, "forbidden", "person")
    event = {"type": "exchange.set", "space_id": w.room, "state": "paused", "why": "spend"}
    w.says_no(w.p(w.MEM), event, "invalid_event", "spend")


def test_chips_pauses_for_spend_and_warns_and_nobody_else_warns(w: Any) -> None:
    spend = {"ceiling_usd": 3, "spent_usd": 3.2, "since_seq": 4, "uncounted_runs": 0}
    pause = {
        "type": "exchange.set",
        "space_id": w.room,
        "state": "paused",
        "why": "spend",
        "spend": spend,
    }
    warning = {
        "type": "budget.warning",
        "space_id": w.room,
        "budget": {"limit_usd": 3, "spent_usd": 3.2},
        "threshold": 100,
        "action": "pause",
        "scope": "job",
        "since_seq": 4,
    }
    logged = w.ok(SYSTEM, pause, warning)
    assert [e["type"] for e in logged] == ["exchange.set", "budget.warning"]
    w.says_no(w.h(w.H1), warning, "forbidden", "Chips")
    w.says_no(w.p(w.OWN), warning, "forbidden", "Chips")


# Counting at the door (rules/exchanges.py, written into the event)


def chat(w: Any, who: str, text: str) -> dict[str, Any]:
    logged = w.ok(w.h(who), {"type": "message.post", "space_id": w.room, "text": text})
    return dict(logged[0])


def between_agents(w: Any, n: int) -> list[dict[str, Any]]:
    said = []
    for i in range(n):
        who, to = (w.H1, "Ledger") if i % 2 == 0 else (w.H2, "Scout")
        said.append(chat(w, who, f"@{to} step {i} is done"))
    return said


def test_from_half_the_stop_a_message_between_agents_carries_exchange(w: Any) -> None:
    said = between_agents(w, 17)
    assert all("exchange" not in e for e in said[:7])
    assert said[7]["exchange"]["count"] == 8 and "Stop now" not in said[7]["exchange"]["note"]
    assert said[15]["exchange"]["stop"] == 16 and "Stop now" in said[15]["exchange"]["note"]
    assert said[16]["addressed_to"] == [w.H2] and "held" not in said[16]


def test_past_the_hold_a_message_is_for_nobody_and_held(w: Any) -> None:
    w.ok(w.p(w.OWN), {"type": "workspace.referee_set", "stop": 4, "hold": 6})
    said = between_agents(w, 7)
    assert [("held" in e) for e in said] == [False] * 6 + [True]
    held = said[-1]
    assert held["addressed_to"] == [] and held["held_for"] == [w.H2]
    assert held["exchange"]["count"] == 7 and held["exchange"]["allowance"] == 6


def test_a_person_acting_starts_the_count_again_and_a_pause_holds(w: Any) -> None:
    w.ok(w.p(w.OWN), {"type": "workspace.referee_set", "stop": 4, "hold": 6})
    between_agents(w, 5)
    w.say(w.MEM, w.room, "how is it going?")
    assert "exchange" not in between_agents(w, 1)[0]
    w.ok(w.p(w.MEM), {"type": "exchange.set", "space_id": w.room, "state": "paused"})
    assert between_agents(w, 1)[0]["held"] is True
    w.say(w.MEM, w.room, "a word")  # a person's act is not Let them carry on
    assert between_agents(w, 1)[0]["held"] is True
    w.ok(w.p(w.MEM), {"type": "exchange.set", "space_id": w.room, "state": "running"})
    assert "held" not in between_agents(w, 1)[0]


def test_a_circle_is_noted_and_taking_turns_is_not(w: Any) -> None:
    first = chat(w, w.H1, "@Ledger thanks!")
    second = chat(w, w.H2, "@Scout thanks!")
    third = chat(w, w.H1, "@Ledger Thanks")
    assert "exchange" not in first and "exchange" not in second
    assert third["exchange"]["circle"] is True and "circle" in third["exchange"]["note"]


def test_a_client_may_not_write_the_verdict(w: Any) -> None:
    event = {"type": "message.post", "space_id": w.room, "text": "hi", "held": True}
    w.says_no(w.h(w.H1), event, "invalid_event", "filled in by Chips")


def test_a_spend_pause_holds_until_a_person_acts(w: Any) -> None:
    pause = {"type": "exchange.set", "space_id": w.room, "state": "paused", "why": "spend"}
    w.ok(SYSTEM, pause)
    assert between_agents(w, 1)[0]["held"] is True
    w.say(w.MEM, w.room, "go on")
    assert "held" not in between_agents(w, 1)[0]


# The lead, who is working, and the hand-off (docs/adr/0090)


def test_a_person_in_the_room_chooses_its_lead_among_its_agents(w: Any) -> None:
    event = {"type": "space.lead_set", "space_id": w.room, "agent_id": w.H1}
    assert w.ok(w.p(w.MEM), event)[0]["agent_id"] == w.H1
    w.ok(w.p(w.MEM), {"type": "space.lead_set", "space_id": w.room, "agent_id": None})
    w.says_no(w.h(w.H1), event, "forbidden", "person")
    w.says_no(w.p(w.OUT), event, "forbidden", "not a member")
    person = {"type": "space.lead_set", "space_id": w.room, "agent_id": w.MEM}
    w.says_no(w.p(w.MEM), person, "invalid_event", "one of the agents in it")
    stranger = {"type": "space.lead_set", "space_id": w.room, "agent_id": "agt_nobody"}
    w.says_no(w.p(w.MEM), stranger, "invalid_event", "one of the agents in it")


def test_only_chips_says_who_works_and_hands_the_lead_words(w: Any) -> None:
    working = {
        "type": "room.working",
        "space_id": w.room,
        "working": [
            {"agent_id": w.H1, "run_id": "run_1", "since": "t", "heard_at": "t", "silent_at": "t"}
        ],
    }
    idle = {"type": "room.idle", "space_id": w.room, "since": "t", "idle": []}
    handed = {
        "type": "lead.handed",
        "space_id": w.room,
        "message_id": "msg_1",
        "agent_id": w.H2,
        "said_by": w.H1,
        "quiet_seconds": 20,
    }
    assert [e["type"] for e in w.ok(SYSTEM, working, idle, handed)] == [
        "room.working",
        "room.idle",
        "lead.handed",
    ]
    for event in (working, idle, handed):
        w.says_no(w.h(w.H1), event, "forbidden", "Chips")
        w.says_no(w.p(w.OWN), event, "forbidden", "Chips")


def test_a_paused_room_or_a_lead_gone_is_handed_nothing(w: Any) -> None:
    handed = {
        "type": "lead.handed",
        "space_id": w.room,
        "message_id": "msg_1",
        "agent_id": w.H2,
        "said_by": w.H1,
        "quiet_seconds": 20,
    }
    w.ok(w.p(w.MEM), {"type": "exchange.set", "space_id": w.room, "state": "paused"})
    w.says_no(SYSTEM, handed, "invalid_event", "paused")
    w.ok(w.p(w.MEM), {"type": "exchange.set", "space_id": w.room, "state": "running"})
    w.says_no(SYSTEM, {**handed, "agent_id": "agt_gone"}, "invalid_event", "no longer in the room")


def test_a_question_or_an_approval_put_to_a_person_starts_the_count_again(w: Any) -> None:
    """docs/product/websocket.md: the count runs "since … an agent last made something new: … a
    question to a person, an approval request"."""
    w.ok(w.h(w.H1), {"type": "run.started", "run_id": "run_q", "space_id": w.room, "goal": "g"})
    options = [{"value": "yes", "label": "Yes"}, {"value": "no", "label": "No"}]
    made_new = [
        {"type": "question.ask", "question_id": "q1", "prompt": "Pay?", "options": options},
        {"type": "approval.request", "approval_id": "ap1", "action": "pay"},
    ]
    for event in made_new:
        assert between_agents(w, 9)[-1]["exchange"]["count"] >= 9
        w.ok(w.h(w.H1), {**event, "run_id": "run_q"})
        after = between_agents(w, 1)[0]
        assert "exchange" not in after, event["type"]
        assert w.state.exchange(w.room).count == 1
