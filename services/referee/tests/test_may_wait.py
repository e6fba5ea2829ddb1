"""The referee's test of which events' folds may wait for the next (docs/adr/0162)."""

from __future__ import annotations

from typing import Any

import pytest

from chips_common.rules.lead import Room, fold
from chips_referee.consumer import may_wait

pytestmark = pytest.mark.unit


def post(who: str, kind: str = "person", **more: Any) -> dict[str, Any]:
    return {
        "type": "message.post",
        "workspace_id": "ws_1",
        "seq": 7,
        "ts": "2026-12-04T19:00:00Z",
        "space_id": "spc_1",
        "id": "evt_1",
        "actor": {"kind": kind, "id": who},
        "text": "hello",
        **more,
    }


def test_a_person_s_post_outside_any_turn_may_wait() -> None:
    assert may_wait(post("prs_ana"))
    assert may_wait(post("prs_ana", addressed_to=["agt_scout"], mentions=["agt_scout"]))


def test_an_agent_s_or_a_harness_s_post_may_not() -> None:
    assert not may_wait(post("agt_scout", "agent"))
    assert not may_wait(post("hrn_scout", "harness"))


def test_a_post_in_a_turn_may_not() -> None:
    assert not may_wait(post("prs_ana", run_id="run_1"))


def test_a_post_with_no_actor_may_not() -> None:
    assert not may_wait({**post("prs_ana"), "actor": None})
    assert not may_wait({**post("prs_ana"), "actor": {"kind": "person"}})


@pytest.mark.parametrize(
    "kind",
    [
        "run.started",
        "run.completed",
        "step.log",
        "usage",
        "membership.added",
        "space.lead_set",
        "lead.handed",
        "room.working",
        "exchange.set",
        "space.erased",
    ],
)
def test_what_may_change_a_turn_or_a_lead_may_not(kind: str) -> None:
    assert not may_wait({**post("prs_ana"), "type": kind})


def test_an_event_in_no_room_may_wait() -> None:
    assert may_wait({"type": "participant.joined", "workspace_id": "ws_1", "seq": 3})
    assert may_wait({"type": "agent.registered", "workspace_id": "ws_1", "space_id": None})


def test_what_a_post_that_may_wait_changes_is_no_turn() -> None:
    """Folded on a room with a turn going, a post that may wait leaves its turns, and so
    what the referee tells of them, as they were."""
    room = fold(Room(), {**post("prs_ana"), "type": "space.created", "members": []})
    started = {**post("agt_scout", "agent"), "type": "run.started", "run_id": "run_1", "seq": 8}
    room = fold(room, started)
    after = fold(room, {**post("prs_ana", addressed_to=["agt_scout"]), "seq": 9})
    assert may_wait({**post("prs_ana", addressed_to=["agt_scout"]), "seq": 9})
    assert after.turns == room.turns and after.changed == room.changed
