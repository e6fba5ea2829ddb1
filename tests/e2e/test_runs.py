"""Runs and their state machine at the door (docs/product/websocket.md, Writing).

Every run is somebody's: an event for a run nobody started is not_found, one for another
harness's run is forbidden, and one the run's state does not take is invalid_event with
the reason. One test per rule.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.client import Api, Identity, key


async def harness_room(api: Api) -> tuple[Identity, Identity, str]:
    owner = await api.create_workspace(owner="Arjun Rao")
    jacobian, room = await api.connect_harness(owner, "Jacobian")
    return owner, jacobian, room


async def start(api: Api, harness: Identity, room: str, run_id: str | None = None) -> str:
    run_id = run_id or key("run_j")
    await api.append(
        harness,
        {"type": "run.started", "run_id": run_id, "space_id": room, "goal": "Order the PO"},
    )
    return run_id


def step(run_id: str, status: str = "started", step_id: str = "stp_1") -> dict[str, Any]:
    return {"type": "step.log", "run_id": run_id, "step_id": step_id, "status": status}


async def test_a_run_goes_through_its_life(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    await api.append(jacobian, {"type": "run.status", "run_id": run, "verb": "reading"})
    await api.append(jacobian, step(run))
    await api.append(jacobian, {"type": "run.paused", "run_id": run, "why": "waiting"})
    await api.append(jacobian, {"type": "run.resumed", "run_id": run})
    await api.append(jacobian, step(run, "done"))
    last = await api.append(jacobian, {"type": "run.completed", "run_id": run, "summary": "Sent"})
    events = await api.read(owner, space_id=room)
    mine = [e for e in events if e.get("run_id") == run]
    assert [e["type"] for e in mine] == [
        "run.started",
        "run.status",
        "step.log",
        "run.paused",
        "run.resumed",
        "step.log",
        "run.completed",
    ]
    # Chips fills in the run's room on every event that only names the run.
    assert all(e["space_id"] == room for e in mine) and mine[-1]["seq"] == last


async def test_a_run_nobody_started_is_not_found(api: Api) -> None:
    _, jacobian, _ = await harness_room(api)
    await api.refused(jacobian, step("run_ghost"), "not_found", "no run run_ghost")


async def test_another_harness_s_run_is_forbidden(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    scout, _ = await api.connect_harness(owner, "Scout")
    run = await start(api, jacobian, room)
    await api.refused(scout, step(run), "forbidden", "another harness's run")


async def test_nothing_is_taken_after_a_run_ended(api: Api) -> None:
    _, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    await api.append(jacobian, {"type": "run.failed", "run_id": run, "why": "timed out"})
    await api.refused(jacobian, step(run), "invalid_event", "has ended (failed)")
    await api.refused(
        jacobian, {"type": "run.completed", "run_id": run}, "invalid_event", "has ended"
    )


async def test_a_pause_of_a_run_not_running_is_refused(api: Api) -> None:
    _, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    await api.append(jacobian, {"type": "run.paused", "run_id": run})
    await api.refused(
        jacobian, {"type": "run.paused", "run_id": run}, "invalid_event", "is not running"
    )


async def test_a_resume_of_a_run_not_paused_is_refused(api: Api) -> None:
    _, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    await api.refused(
        jacobian, {"type": "run.resumed", "run_id": run}, "invalid_event", "is not paused"
    )


async def test_a_paused_run_takes_no_step(api: Api) -> None:
    _, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    await api.append(jacobian, {"type": "run.paused", "run_id": run})
    await api.refused(jacobian, step(run), "invalid_event", "resume it before its next step")


async def test_a_run_is_started_once(api: Api) -> None:
    _, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    await api.refused(
        jacobian,
        {"type": "run.started", "run_id": run, "space_id": room, "goal": "again"},
        "invalid_event",
        "was started already",
    )


async def test_only_a_harness_starts_a_run(api: Api) -> None:
    owner, _, room = await harness_room(api)
    await api.refused(
        owner,
        {"type": "run.started", "run_id": "run_p", "space_id": room, "goal": "mine"},
        "forbidden",
        "only a harness",
    )


async def test_a_harness_starts_runs_only_in_its_rooms(api: Api) -> None:
    owner, jacobian, _ = await harness_room(api)
    elsewhere = await api.open_space(owner, "Private")
    await api.refused(
        jacobian,
        {"type": "run.started", "run_id": "run_x", "space_id": elsewhere, "goal": "peek"},
        "forbidden",
        "not a member",
    )


async def test_a_person_does_not_report_a_runs_steps(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    run = await start(api, jacobian, room)
    await api.refused(owner, step(run), "forbidden", "only the harness whose run it is")


async def test_an_event_names_its_runs_own_room(api: Api) -> None:
    owner, jacobian, room = await harness_room(api)
    other = await api.open_space(owner, "Other", [jacobian.participant_id])
    run = await start(api, jacobian, room)
    await api.refused(
        jacobian, {**step(run), "space_id": other}, "invalid_event", "a run of another space"
    )
