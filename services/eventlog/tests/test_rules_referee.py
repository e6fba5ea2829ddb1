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
