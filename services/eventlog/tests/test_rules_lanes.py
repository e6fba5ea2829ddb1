"""The door's refusals for lanes (rules/lanes.py, ADR 0017)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.unit

TASK = {"goal": "book the flight"}


def opened(w: Any, lane_id: str = "lane_1", **fields: Any) -> dict[str, Any]:
    event = {"type": "lane.opened", "lane_id": lane_id, "to_space_id": w.other, "task": TASK}
    event.update(fields)
    return {k: v for k, v in event.items() if v is not None}


def ended(type_: str, lane_id: str = "lane_1", **fields: Any) -> dict[str, Any]:
    body = {"lane.completed": {"summary": "done"}, "lane.failed": {"why": "no"}}.get(type_, {})
    return {"type": type_, "lane_id": lane_id, **body, **fields}


def lane(w: Any) -> Any:
    w.ok(w.p(w.OWN), opened(w, from_space_id=w.room))
    return w


def test_an_operator_opens_a_lane(w: Any) -> None:
    w.says_no(
        w.operator,
        opened(w, from_space_id=w.room),
        "forbidden",
        "a lane is opened by a person or by a harness's run",
    )


def test_a_lane_opened_twice(w: Any) -> None:
    lane(w)
    w.says_no(
        w.p(w.OWN), opened(w, from_space_id=w.room), "invalid_event", "lane_1 was opened already"
    )


def test_a_lane_from_no_run(w: Any) -> None:
    w.says_no(w.h(w.H1), opened(w, run_id="run_x"), "not_found", "no run run_x was started")


def test_a_lane_from_another_harness_s_run(w: Any) -> None:
    w.run("run_1")
    w.says_no(w.h(w.H2), opened(w, run_id="run_1"), "forbidden", "run_1 is not your run")


def test_a_lane_from_an_ended_run(w: Any) -> None:
    w.run("run_1")
    w.ok(w.h(w.H1), {"type": "run.completed", "run_id": "run_1"})
    w.says_no(
        w.h(w.H1),
        opened(w, run_id="run_1"),
        "invalid_event",
        "run_1 has ended (completed); it opens no lane",
    )


def test_a_lane_from_a_run_of_another_room(w: Any) -> None:
    w.run("run_1")
    w.says_no(
        w.h(w.H1),
        opened(w, run_id="run_1", from_space_id=w.home),
        "invalid_event",
        "run_1 is a run of another room",
    )


def test_a_lane_from_nowhere(w: Any) -> None:
    w.says_no(w.p(w.OWN), opened(w), "invalid_event", "a lane names the room it is opened from")


def test_a_lane_with_a_space_id_of_its_own(w: Any) -> None:
    w.says_no(
        w.p(w.OWN),
        opened(w, from_space_id=w.room, space_id=w.room),
        "invalid_event",
        "a lane is at home in to_space_id",
    )


def test_a_lane_into_its_own_room(w: Any) -> None:
    w.says_no(
        w.p(w.OWN),
        opened(w, from_space_id=w.room, to_space_id=w.room),
        "invalid_event",
        "a lane goes into another room than its own",
    )


def test_a_lane_from_a_room_the_opener_is_not_in(w: Any) -> None:
    w.says_no(
        w.p(w.OUT),
        opened(w, from_space_id=w.room),
        "forbidden",
        "you are not in the room the lane is opened from",
    )


def test_a_lane_into_no_room(w: Any) -> None:
    w.says_no(
        w.p(w.OWN),
        opened(w, from_space_id=w.room, to_space_id="spc_none"),
        "not_found",
        "no room spc_none to open a lane into",
    )


def test_a_lane_into_an_archived_room(w: Any) -> None:
    w.ok(w.p(w.OWN), {"type": "space.updated", "space_id": w.other, "state": "closed"})
    w.says_no(
        w.p(w.OWN),
        opened(w, from_space_id=w.room),
        "invalid_event",
        "the room the lane goes to is archived",
    )


def test_a_lane_into_a_room_the_opener_is_not_in(w: Any) -> None:
    w.says_no(
        w.p(w.MEM),
        opened(w, from_space_id=w.room),
        "forbidden",
        "you are not in the room the lane goes to",
    )


def test_an_end_of_no_lane(w: Any) -> None:
    w.says_no(
        w.h(w.H1),
        ended("lane.completed"),
        "not_found",
        "no lane lane_1 was opened in this workspace",
    )


def test_an_end_naming_other_rooms(w: Any) -> None:
    lane(w)
    w.says_no(
        w.h(w.H1),
        ended("lane.completed", space_id=w.home),
        "invalid_event",
        "lane_1 is a lane of other rooms",
    )


def test_an_ended_lane_takes_nothing(w: Any) -> None:
    lane(w).ok(w.h(w.H1), ended("lane.completed"))
    w.says_no(
        w.h(w.H1),
        ended("lane.failed"),
        "invalid_event",
        "lane_1 has ended (completed); it takes nothing more, lane.failed included",
    )


def test_a_person_completes_a_lane(w: Any) -> None:
    lane(w)
    w.says_no(
        w.p(w.OWN),
        ended("lane.completed"),
        "forbidden",
        "lane.completed is written by the harness working the lane",
    )


def test_a_harness_outside_the_lane_s_room_completes_it(w: Any) -> None:
    lane(w)
    w.says_no(
        w.h(w.H2), ended("lane.completed"), "forbidden", "you are not in the room lane_1 went to"
    )


def test_another_harness_completes_a_worked_lane(w: Any) -> None:
    lane(w)
    w.ok(w.p(w.OWN), {"type": "membership.added", "space_id": w.other, "participant_id": w.H2})
    w.run("run_w", space_id=w.other, lane_id="lane_1")
    w.says_no(
        w.h(w.H2), ended("lane.completed"), "forbidden", "lane_1 is worked by another harness's run"
    )


def test_a_stranger_cancels_a_lane(w: Any) -> None:
    lane(w)
    w.says_no(
        w.p(w.OUT), ended("lane.cancelled"), "forbidden", "lane_1 is cancelled from its route card"
    )


def test_a_harness_that_neither_opened_nor_works_it_cancels(w: Any) -> None:
    lane(w)
    w.says_no(
        w.h(w.H2),
        ended("lane.cancelled"),
        "forbidden",
        "lane_1 is cancelled by the people of its rooms",
    )


def test_a_run_on_no_lane(w: Any) -> None:
    w.says_no(
        w.h(w.H1),
        {
            "type": "run.started",
            "run_id": "run_w",
            "space_id": w.other,
            "goal": "g",
            "lane_id": "lane_x",
        },
        "not_found",
        "no lane lane_x was opened",
    )


def test_a_run_on_an_ended_lane(w: Any) -> None:
    lane(w).ok(w.p(w.OWN), ended("lane.cancelled"))
    w.says_no(
        w.h(w.H1),
        {
            "type": "run.started",
            "run_id": "run_w",
            "space_id": w.other,
            "goal": "g",
            "lane_id": "lane_1",
        },
        "invalid_event",
        "lane_1 has ended (cancelled); no run works it",
    )


def test_a_run_on_a_lane_of_another_room(w: Any) -> None:
    lane(w)
    w.says_no(
        w.h(w.H1),
        {
            "type": "run.started",
            "run_id": "run_w",
            "space_id": w.room,
            "goal": "g",
            "lane_id": "lane_1",
        },
        "invalid_event",
        "lane_1 went to another room",
    )


def test_a_second_run_on_a_worked_lane(w: Any) -> None:
    lane(w)
    w.run("run_w", space_id=w.other, lane_id="lane_1")
    w.says_no(
        w.h(w.H1),
        {
            "type": "run.started",
            "run_id": "run_v",
            "space_id": w.other,
            "goal": "g",
            "lane_id": "lane_1",
        },
        "invalid_event",
        "lane_1 is worked by run_w already",
    )


def test_a_lane_is_logged_in_both_rooms_and_a_cancel_stops_its_worker(w: Any) -> None:
    logged = w.ok(w.p(w.OWN), opened(w, from_space_id=w.room))
    assert [e["space_id"] for e in logged] == [w.other, w.room]
    w.run("run_w", space_id=w.other, lane_id="lane_1")
    cancelled = w.ok(w.p(w.OWN), ended("lane.cancelled"))
    assert [(e["type"], e["space_id"]) for e in cancelled] == [
        ("lane.cancelled", w.other),
        ("lane.cancelled", w.room),
        ("run.cancel", w.other),
    ]
    assert w.state.run("run_w").state == "cancelled"
    assert w.state.lane("lane_1").state == "cancelled"
