"""What leaving a room stops, decided without Postgres (rules/stopping.py).

docs/product/websocket.md, One room at a time: each run in the room is sent run.cancel, with the
lanes it opened; a lane cancelled so is logged in both its rooms and the run working it
is stopped too. Each run and each lane is stopped once.
"""

from __future__ import annotations

import pytest

from chips_common.events import LaneCancelled, MembershipRemoved, RunCancel, SpaceUpdated
from chips_eventlog.rules.stopping import ARCHIVED, DELETED, LEFT, Stop, plan_stop, stopped_by
from chips_eventlog.state import Lane, Run

pytestmark = pytest.mark.unit

SHOP, HOME = "spc_shop", "spc_home"


def run(run_id: str, room: str = SHOP, state: str = "running") -> Run:
    return Run(run_id, room, "hrn_j", state)


def lane(lane_id: str, opener: str | None, worker: str | None = None, state: str = "open") -> Lane:
    return Lane(lane_id, opener, SHOP, HOME, "hrn_j", worker, state)


def logged(plan_events: list[Stop]) -> list[tuple[str, str, str]]:
    out = []
    for item in plan_events:
        body, filled = item.body, item.filled
        assert isinstance(body, RunCancel | LaneCancelled)
        ident = body.run_id if isinstance(body, RunCancel) else body.lane_id
        out.append((body.type, ident, filled["space_id"]))
    return out


def test_a_run_with_no_lanes_is_cancelled_in_its_room() -> None:
    plan = plan_stop([run("run_1")], [], {}, DELETED)
    assert logged(plan.events) == [("run.cancel", "run_1", SHOP)]
    assert plan.events[0].body == RunCancel(run_id="run_1", why=DELETED)
    assert plan.runs == ["run_1"] and plan.lanes == []


def test_a_run_s_lane_is_cancelled_in_both_rooms_and_its_worker_stopped() -> None:
    worker = run("run_w", HOME)
    plan = plan_stop([run("run_1")], [lane("lane_1", "run_1", "run_w")], {"run_w": worker}, LEFT)
    assert logged(plan.events) == [
        ("run.cancel", "run_1", SHOP),
        ("lane.cancelled", "lane_1", HOME),
        ("lane.cancelled", "lane_1", SHOP),
        ("run.cancel", "run_w", HOME),
    ]
    cancelled = plan.events[1].body
    assert isinstance(cancelled, LaneCancelled)
    assert cancelled.why == f"run_1 was stopped: {LEFT}"
    assert plan.events[1].filled["from_space_id"] == SHOP
    assert plan.events[3].body == RunCancel(run_id="run_w", why="lane lane_1 was cancelled")
    assert plan.runs == ["run_1", "run_w"] and plan.lanes == ["lane_1"]


def test_a_lane_a_stopped_run_works_is_cancelled_but_its_opener_carries_on() -> None:
    plan = plan_stop([run("run_w")], [lane("lane_1", "run_open", "run_w")], {}, ARCHIVED)
    assert logged(plan.events) == [
        ("run.cancel", "run_w", SHOP),
        ("lane.cancelled", "lane_1", HOME),
        ("lane.cancelled", "lane_1", SHOP),
    ]
    assert "run_open" not in plan.runs


def test_each_run_and_lane_is_stopped_once() -> None:
    both = [run("run_1"), run("run_2")]
    lanes = [lane("lane_1", "run_1", "run_2")]
    plan = plan_stop(both, lanes, {"run_2": both[1]}, DELETED)
    assert logged(plan.events) == [
        ("run.cancel", "run_1", SHOP),
        ("lane.cancelled", "lane_1", HOME),
        ("lane.cancelled", "lane_1", SHOP),
        ("run.cancel", "run_2", SHOP),
    ]


def test_ended_lanes_and_runs_are_left_as_they_are() -> None:
    ended = run("run_w", HOME, state="completed")
    lanes = [lane("lane_done", "run_1", state="completed"), lane("lane_1", "run_1", "run_w")]
    plan = plan_stop([run("run_1")], lanes, {"run_w": ended}, DELETED)
    assert [e for _, e, _ in logged(plan.events)] == ["run_1", "lane_1", "lane_1"]


def test_what_a_room_operation_stops() -> None:
    removed = MembershipRemoved(space_id=SHOP, participant_id="hrn_j")
    assert stopped_by(removed) == (LEFT, SHOP, "hrn_j")
    assert stopped_by(SpaceUpdated(space_id=SHOP, state="closed")) == (ARCHIVED, SHOP, None)
    assert stopped_by(SpaceUpdated(space_id=SHOP, state="open")) is None
    assert stopped_by(SpaceUpdated(space_id=SHOP, title="New")) is None
