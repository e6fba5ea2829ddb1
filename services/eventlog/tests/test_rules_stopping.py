"""Leaving, archiving or deleting a room stops its work first, through the door
(rules/stopping.py), and a reply on a run is said in the run's room (rules/runs.py)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.unit


def thread_of_room(w: Any) -> str:
    return str(
        w.created(
            w.p(w.MEM),
            {
                "type": "space.created",
                "kind": "thread",
                "parent_space_id": w.room,
                "root_message_id": w.said_by_maya,
            },
        )
    )


def test_a_run_in_a_thread_stops_when_its_harness_leaves_the_room(w: Any) -> None:
    thread = thread_of_room(w)
    w.run("run_t", space_id=thread)
    logged = w.ok(
        w.p(w.OWN), {"type": "membership.removed", "space_id": w.room, "participant_id": w.H1}
    )
    assert [(e["type"], e["space_id"]) for e in logged] == [
        ("run.cancel", thread),
        ("membership.removed", w.room),
    ]
    assert w.state.run("run_t").state == "cancelled"


def test_a_lane_a_stopped_run_opened_is_cancelled_with_it(w: Any) -> None:
    w.run("run_1")
    w.ok(
        w.h(w.H1),
        {
            "type": "lane.opened",
            "lane_id": "lane_1",
            "run_id": "run_1",
            "to_space_id": w.other,
            "task": {"goal": "book the flight"},
        },
    )
    logged = w.ok(w.p(w.OWN), {"type": "space.updated", "space_id": w.room, "state": "closed"})
    assert [(e["type"], e["space_id"]) for e in logged] == [
        ("run.cancel", w.room),
        ("lane.cancelled", w.other),
        ("lane.cancelled", w.room),
        ("space.updated", w.room),
    ]
    assert w.state.lane("lane_1").state == "cancelled"


def test_deleting_a_room_stops_its_runs_first_and_spares_their_cancels(w: Any) -> None:
    from chips_eventlog.door import Door

    w.run("run_1")
    door = Door(w.state, w.now)
    req = _request(w, w.p(w.OWN), {"type": "space.erased", "space_id": w.room})
    logged = door.append(req)
    assert [e["type"] for e in logged] == ["run.cancel", "space.erased"]
    cancel, erased = logged
    assert cancel["why"] == "the room was deleted"
    assert door.spared == {cancel["seq"]}
    assert w.state.erasures[0].spared == (cancel["seq"],)
    assert w.state.erasures[0].seq == erased["seq"] == cancel["seq"] + 1
    w.state.settle(door.head_seq, [])


def test_a_refused_delete_stops_nothing(w: Any) -> None:
    w.run("run_1")
    w.says_no(
        w.p(w.MEM),
        {"type": "space.erased", "space_id": w.room},
        "forbidden",
        "only the room's owner, or a workspace owner or admin, deletes it",
    )
    assert w.state.run("run_1").state == "running"


def test_a_reply_on_the_run_is_said_in_its_room(w: Any) -> None:
    w.run("run_1")
    [logged] = w.ok(w.h(w.H1), {"type": "message.post", "run_id": "run_1", "text": "done"})
    assert (logged["space_id"], logged["run_id"]) == (w.room, "run_1")


def test_a_reply_on_a_run_nobody_started(w: Any) -> None:
    w.says_no(
        w.h(w.H1),
        {"type": "message.post", "run_id": "run_x", "text": "done"},
        "not_found",
        "no run run_x was started in this workspace",
    )


def test_a_reply_on_another_harness_s_run(w: Any) -> None:
    w.run("run_1")
    w.says_no(
        w.h(w.H2),
        {"type": "message.post", "run_id": "run_1", "text": "mine"},
        "forbidden",
        "another harness's run",
    )


def _request(w: Any, actor: Any, *events: Any) -> Any:
    from chips_common.append import AppendRequest

    return AppendRequest(
        request_id="r",
        workspace_id=w.state.workspace_id,
        credential_id="c",
        actor=actor,
        idempotency_key="erase-1",
        events=list(events),
    )


async def test_a_reply_on_the_run_carries_its_files(w: Any, monkeypatch: Any) -> None:
    """The uploads of a post said on a run are read for its room, though it names none."""
    from chips_eventlog import state_prefetch

    w.run("run_1")
    raw = {"type": "message.post", "run_id": "run_1", "upload_ids": ["upl_1"]}
    seen: list[Any] = []

    async def read_files(conn: Any, state: Any, posts: Any) -> None:
        seen.extend(posts)

    monkeypatch.setattr(state_prefetch, "prefetch_files", read_files)
    await state_prefetch.prefetch(None, w.state, [raw])  # type: ignore[arg-type]
    assert seen == [(w.room, ["upl_1"])]
