"""Agents in the pure rules: who is in the room, handles, addressing and ``for``.

docs/product/websocket.md, Agents (Being spoken to; One of yours addressing another of yours) and
Who is in the room; docs/adr/0070.
"""

from __future__ import annotations

from typing import Any

import pytest

from chips_common.rules.addressing import address
from chips_common.rules.delivery import WorkingTurns, takers
from chips_common.rules.delivery import shape_for as shape
from chips_common.rules.handles import Member, as_shown, resolve_mentions
from chips_common.rules.room import note_for, room_members

pytestmark = pytest.mark.unit

ARJUN = Member("usr_arjun", "person", "Arjun", "owner")
JACOBIAN = Member("hrn_jacobian", "harness", "Jacobian", "agents")
OPENCLAW_H = Member("hrn_openclaw", "harness", "OpenClaw", "agents")
ASCII = Member("agt_ascii", "agent", "ASCII Art", "member", "hrn_jacobian", "Jacobian")
PREP = Member("agt_prep", "agent", "Openings Prep", "member", "hrn_jacobian", "Jacobian")
OC = Member("agt_oc", "agent", "OpenClaw", "member", "hrn_openclaw", "OpenClaw")
OC2 = Member("agt_oc2", "agent", "OpenClaw 2", "member", "hrn_openclaw", "OpenClaw")
LEDGER = Member("hrn_ledger", "harness", "Ledger", "member")

OWNERS = {"agt_ascii": "hrn_jacobian", "agt_prep": "hrn_jacobian", "agt_oc": "hrn_openclaw"}


def owner_of(pid: str) -> str | None:
    return OWNERS.get(pid)


def shape_for(event: dict[str, Any], recipient_id: str, kind: Any, owners: Any) -> Any:
    """As a harness that declared ``agents`` is sent it."""
    return shape(event, recipient_id, kind, owners, speaks_agents=True)


def post(actor: dict[str, str], addressed_to: list[str] | None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "v": 1,
        "id": "evt_1",
        "seq": 9,
        "ts": "2026-10-02T18:02:00.000Z",
        "workspace_id": "ws_1",
        "actor": actor,
        "type": "message.post",
        "space_id": "spc_1",
        "kind": "text",
        "text": "hi",
    }
    if addressed_to is not None:
        event["addressed_to"] = addressed_to
    return event


PERSON = {"kind": "person", "id": "usr_arjun"}
ASCII_SAYS = {"kind": "agent", "id": "agt_ascii", "harness_id": "hrn_jacobian"}


# --- who is in the room -----------------------------------------------------------------


def test_a_harness_behind_its_agents_is_never_listed() -> None:
    shown = as_shown([ARJUN, JACOBIAN, ASCII, PREP, LEDGER])
    assert [m.id for m in shown] == ["usr_arjun", "agt_ascii", "agt_prep", "hrn_ledger"]


def test_a_member_harness_with_an_agent_here_is_shown_as_that_agent() -> None:
    member_too = Member("hrn_jacobian", "harness", "Jacobian", "member")
    assert [m.id for m in as_shown([member_too, ASCII])] == ["agt_ascii"]


def test_members_say_the_harness_of_an_agent_named_otherwise() -> None:
    """The product's example: ASCII Art says Jacobian, OpenClaw none, OpenClaw 2 OpenClaw."""
    listed = room_members(as_shown([ARJUN, ASCII, OC, OC2, JACOBIAN, OPENCLAW_H]))
    assert listed == [
        {
            "participant_id": "usr_arjun",
            "kind": "person",
            "name": "Arjun",
            "standing": "owner",
            "handle": "@Arjun",
        },
        {
            "participant_id": "agt_ascii",
            "kind": "agent",
            "name": "ASCII Art",
            "harness": "Jacobian",
            "standing": "member",
            "handle": "@ASCIIArt",
        },
        {
            "participant_id": "agt_oc",
            "kind": "agent",
            "name": "OpenClaw",
            "standing": "member",
            "handle": "@OpenClaw",
        },
        {
            "participant_id": "agt_oc2",
            "kind": "agent",
            "name": "OpenClaw 2",
            "harness": "OpenClaw",
            "standing": "member",
            "handle": "@OpenClaw2",
        },
    ]


def test_the_note_names_an_agent_with_its_harness() -> None:
    note = note_for("agt_oc2", [ARJUN, ASCII, OC, OC2])
    assert note.startswith(
        "In this space: Arjun (person, @Arjun), ASCII Art (Jacobian agent, @ASCIIArt), "
        "OpenClaw (agent, @OpenClaw), and you, OpenClaw 2 (OpenClaw agent, @OpenClaw2)."
    )


# --- handles and addressing -------------------------------------------------------------


def test_the_harness_s_name_is_a_handle_of_its_one_agent_here() -> None:
    assert resolve_mentions("@Jacobian can you draw it?", [ARJUN, ASCII, LEDGER])[0] == [
        "agt_ascii"
    ]


def test_the_harness_s_name_reaches_none_of_several_agents() -> None:
    assert resolve_mentions("@Jacobian anyone?", [ARJUN, ASCII, PREP])[0] == []


def test_an_agent_s_own_name_reaches_it() -> None:
    assert resolve_mentions("@OpeningsPrep please", [ARJUN, ASCII, PREP])[0] == ["agt_prep"]


def test_addressed_to_holds_agent_ids() -> None:
    decided = address(sender=ARJUN, text="@ASCIIArt draw it", members=[ARJUN, ASCII, PREP])
    assert decided.addressed_to == ["agt_ascii"]


def test_an_agent_s_words_are_for_the_agents_it_names() -> None:
    decided = address(sender=ASCII, text="@OpeningsPrep over to you", members=[ARJUN, ASCII, PREP])
    assert decided.addressed_to == ["agt_prep"]


def test_an_agent_s_words_naming_nobody_are_for_the_people() -> None:
    decided = address(sender=ASCII, text="Done.", members=[ARJUN, ASCII, PREP])
    assert decided.addressed_to == []


def test_a_person_s_message_with_several_agents_is_for_each() -> None:
    decided = address(sender=ARJUN, text="morning", members=[ARJUN, ASCII, PREP, OC])
    assert decided.addressed_to == ["agt_ascii", "agt_prep", "agt_oc"]


# --- for: one delivery per connection ---------------------------------------------------


def test_one_delivery_for_two_agents_of_one_harness() -> None:
    event = post(PERSON, ["agt_ascii", "agt_prep", "agt_oc"])
    shaped = shape_for(event, "hrn_jacobian", "harness", owner_of)
    assert (shaped["type"], shaped["for"]) == ("message.new", ["agt_ascii", "agt_prep"])
    other = shape_for(event, "hrn_openclaw", "harness", owner_of)
    assert other["for"] == ["agt_oc"]


def test_a_message_for_somebody_else_is_overheard_without_for() -> None:
    shaped = shape_for(post(PERSON, ["agt_oc"]), "hrn_jacobian", "harness", owner_of)
    assert shaped["type"] == "message.overheard"
    assert "for" not in shaped


def test_for_names_the_harness_itself_where_the_room_holds_it() -> None:
    shaped = shape_for(post(PERSON, ["hrn_ledger"]), "hrn_ledger", "harness", owner_of)
    assert shaped["for"] == ["hrn_ledger"]


def test_one_agent_s_words_to_another_come_back_for_that_one() -> None:
    shaped = shape_for(post(ASCII_SAYS, ["agt_prep"]), "hrn_jacobian", "harness", owner_of)
    assert (shaped["type"], shaped["for"]) == ("message.new", ["agt_prep"])


def test_for_never_names_the_agent_that_said_it() -> None:
    assert takers(post(ASCII_SAYS, ["agt_ascii", "agt_prep"]), "hrn_jacobian", owner_of) == [
        "agt_prep"
    ]


def test_an_agent_s_words_to_the_people_come_back_as_sent() -> None:
    event = post(ASCII_SAYS, [])
    assert shape_for(event, "hrn_jacobian", "harness", owner_of) is event


def test_an_agent_s_words_to_another_harness_come_back_as_sent() -> None:
    event = post(ASCII_SAYS, ["agt_oc"])
    assert shape_for(event, "hrn_jacobian", "harness", owner_of) is event
    assert shape_for(event, "hrn_openclaw", "harness", owner_of)["for"] == ["agt_oc"]


def test_a_person_hears_an_agent_s_words_as_posted() -> None:
    event = post(ASCII_SAYS, ["agt_prep"])
    assert shape_for(event, "usr_arjun", "person", owner_of) is event


def test_a_message_from_before_addressing_is_for_the_harness_itself() -> None:
    assert shape_for(post(PERSON, None), "hrn_ledger", "harness", owner_of)["for"] == ["hrn_ledger"]


def test_a_harness_that_never_declared_agents_is_sent_no_for() -> None:
    """What it was always sent (docs/product/websocket.md, Saying you speak agents)."""
    event = post(PERSON, ["hrn_ledger"])
    assert shape(event, "hrn_ledger", "harness", owner_of) == {**event, "type": "message.new"}


# --- working_turns ----------------------------------------------------------------------


def started(run_id: str, agent_id: str, harness_id: str, space_id: str = "spc_1") -> dict[str, Any]:
    actor = {"kind": "agent", "id": agent_id, "harness_id": harness_id}
    return {"type": "run.started", "actor": actor, "run_id": run_id, "space_id": space_id}


def test_a_message_for_somebody_else_names_the_agents_working_there() -> None:
    turns = WorkingTurns("hrn_jacobian")
    turns.fold(started("run_1", "agt_ascii", "hrn_jacobian"))
    turns.fold(started("run_2", "agt_prep", "hrn_jacobian", space_id="spc_2"))
    turns.fold(started("run_3", "agt_oc", "hrn_openclaw"))
    named = turns.named_by(post(PERSON, ["agt_oc"]), [])
    assert named == [{"agent_id": "agt_ascii", "run_id": "run_1"}]


def test_working_turns_never_name_the_sender_nor_who_it_is_for() -> None:
    turns = WorkingTurns("hrn_jacobian")
    turns.fold(started("run_1", "agt_ascii", "hrn_jacobian"))
    turns.fold(started("run_2", "agt_prep", "hrn_jacobian"))
    assert turns.named_by(post(ASCII_SAYS, []), []) == [{"agent_id": "agt_prep", "run_id": "run_2"}]
    assert turns.named_by(post(PERSON, ["agt_prep"]), ["agt_prep"]) == [
        {"agent_id": "agt_ascii", "run_id": "run_1"}
    ]


def test_a_turn_that_ended_is_named_no_more() -> None:
    turns = WorkingTurns("hrn_jacobian", {"run_1": ("spc_1", "agt_ascii")})
    turns.fold({"type": "run.completed", "run_id": "run_1", "space_id": "spc_1"})
    assert turns.named_by(post(PERSON, []), []) == []


def test_a_turn_silent_ten_minutes_is_named_no_more() -> None:
    """docs/product/websocket.md: "A turn nothing has been heard from for ten minutes is not
    counted" (docs/adr/0090); the message is said at 18:02."""
    turns = WorkingTurns("hrn_jacobian", silent=600)
    turns.fold({**started("run_1", "agt_ascii", "hrn_jacobian"), "ts": "2026-10-02T17:50:00Z"})
    turns.fold({**started("run_2", "agt_prep", "hrn_jacobian"), "ts": "2026-10-02T17:50:00Z"})
    turns.fold({"type": "step.log", "run_id": "run_2", "ts": "2026-10-02T17:55:00Z"})
    assert turns.named_by(post(PERSON, []), []) == [{"agent_id": "agt_prep", "run_id": "run_2"}]
    # Read from the log at subscribe: the same answer.
    again = WorkingTurns(
        "hrn_jacobian",
        {"run_1": ("spc_1", "agt_ascii"), "run_2": ("spc_1", "agt_prep")},
        {"run_1": "2026-10-02T17:50:00Z", "run_2": "2026-10-02T17:55:00Z"},
        silent=600,
    )
    assert again.named_by(post(PERSON, []), []) == [{"agent_id": "agt_prep", "run_id": "run_2"}]


def test_a_harness_s_own_run_is_its_own_one_agent_s_turn() -> None:
    """A run a harness started as itself (a member of the room itself) is the turn of its
    own one agent, named with its own id; never named to it on its own words (docs/adr/0136)."""
    turns = WorkingTurns("hrn_ledger")
    own = {"kind": "harness", "id": "hrn_ledger"}
    other = {"kind": "harness", "id": "hrn_jacobian"}
    turns.fold({"type": "run.started", "actor": own, "run_id": "run_1", "space_id": "spc_1"})
    turns.fold({"type": "run.started", "actor": other, "run_id": "run_2", "space_id": "spc_1"})
    assert turns.named_by(post(PERSON, []), []) == [{"agent_id": "hrn_ledger", "run_id": "run_1"}]
    assert turns.named_by(post(PERSON, ["hrn_ledger"]), ["hrn_ledger"]) == []
    ledger_says = {**post(PERSON, []), "actor": own}
    assert turns.named_by(ledger_says, []) == []
