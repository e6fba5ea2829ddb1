"""Leaving a room stops the work (docs/product/websocket.md, One room at a time).

A harness taken out of a room, a room archived and a room deleted each stop the runs
there, and in its threads, first: every such run is sent ``run.cancel`` while its harness
is still in the room, with the lanes it opened or works, and only then does the room
change. A lane cancelled so is logged in both its rooms, as one cancelled from its route
card, and the run working it elsewhere is sent ``run.cancel`` too (ADR 0017).

:func:`plan_stop` decides what to log from the runs to stop and their lanes;
:func:`stop_steps` reads both from the door state and returns the plan as steps, with
what each ends. Kept apart from ``runs`` and ``lanes`` because it needs both.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pydantic import JsonValue

from chips_common.append import Actor
from chips_common.events import EventBody, LaneCancelled, MembershipRemoved, RunCancel, SpaceUpdated
from chips_eventlog.rules.common import Step
from chips_eventlog.state import LIVE, Change, Decision, DoorState, Lane, PutLane, PutRun, Run

# Why a run is stopped, by what stopped it: the words the run.cancel carries.
LEFT = "its harness left the room"
ARCHIVED = "the room was archived"
DELETED = "the room was deleted"


@dataclass
class Stop:
    """One event the stop logs, with what Chips fills in (its room)."""

    body: EventBody
    filled: dict[str, JsonValue]


@dataclass
class StopPlan:
    """The events a stop logs, in order, and what they end in the door state."""

    events: list[Stop] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    lanes: list[str] = field(default_factory=list)


def plan_stop(
    stopping: list[Run], lanes: list[Lane], working: dict[str, Run], why: str
) -> StopPlan:
    """What stopping ``stopping`` logs: each run's ``run.cancel`` (in its room), then each
    open lane it opened or works, cancelled in both rooms, and the live run working that
    lane, if another, cancelled too. A run or a lane is stopped once, however many ways
    it is reached. ``working`` holds the live runs that work the lanes, by id.
    """
    plan = StopPlan()

    def cancel_run(run: Run, reason: str) -> None:
        if run.id in plan.runs or run.state not in LIVE:
            return
        plan.runs.append(run.id)
        plan.events.append(Stop(RunCancel(run_id=run.id, why=reason), {"space_id": run.space_id}))

    for run in stopping:
        cancel_run(run, why)
        for lane in lanes:
            if lane.state != "open" or lane.id in plan.lanes:
                continue
            if run.id not in (lane.run_id, lane.working_run_id):
                continue
            plan.lanes.append(lane.id)
            reason = f"{run.id} was stopped: {why}"
            rooms = {"from_space_id": lane.from_space_id, "to_space_id": lane.to_space_id}
            for room in (lane.to_space_id, lane.from_space_id):  # at home first (ADR 0017)
                body = LaneCancelled(lane_id=lane.id, why=reason[:200])
                plan.events.append(Stop(body, {**rooms, "space_id": room}))
            worker = working.get(lane.working_run_id or "")
            if worker is not None:
                cancel_run(worker, f"lane {lane.id} was cancelled")
    return plan


def stopped_by(body: EventBody) -> tuple[str, str, str | None] | None:
    """Whether a room operation stops work: ``(why, room, harness)``. A harness taken out
    of a room stops its own runs there; a room archived stops every run in it (harness
    None). None when the operation stops nothing."""
    match body:
        case MembershipRemoved():
            return LEFT, body.space_id, body.participant_id
        case SpaceUpdated() if body.state == "closed":
            return ARCHIVED, body.space_id, None
    return None


def runs_to_stop(s: DoorState, space_id: str, harness_id: str | None) -> list[Run]:
    """The live runs of a room and its threads (whose members are the room's, so leaving
    the room leaves them too), or of one harness there; oldest first."""
    running = [r for room in (space_id, *s.threads_of(space_id)) for r in s.live_runs(room)]
    if harness_id is not None:
        running = [r for r in running if r.harness_id == harness_id]
    return sorted(running, key=lambda r: (r.started_seq, r.id))


def lanes_of(s: DoorState, run_ids: list[str]) -> list[Lane]:
    """The open lanes the runs opened or work, oldest first."""
    ids = set(run_ids)
    found = [
        lane
        for lane in s.lanes.values()
        if lane.state == "open" and (lane.run_id in ids or lane.working_run_id in ids)
    ]
    return sorted(found, key=lambda lane: (lane.opened_seq, lane.id))


def stop_steps(s: DoorState, stopping: list[Run], why: str, actor: Actor) -> list[Step]:
    """The stop of ``stopping`` (:func:`plan_stop`) as steps to stage, the first of them
    carrying what it ends in the door state (each run cancelled, each lane cancelled)."""
    if not stopping:
        return []
    lanes = lanes_of(s, [r.id for r in stopping])
    working: dict[str, Run] = {}
    for lane in lanes:
        run = s.run(lane.working_run_id) if lane.working_run_id else None
        if run is not None:
            working[run.id] = run
    plan = plan_stop(stopping, lanes, working, why)
    ended: list[Change] = []
    for run_id in plan.runs:
        run = s.run(run_id)
        if run is not None:
            ended.append(PutRun(replace(run, state="cancelled")))
    for lane_id in plan.lanes:
        open_lane = s.lane(lane_id)
        if open_lane is not None:
            ended.append(PutLane(replace(open_lane, state="cancelled")))
    steps = [Step(item.body, actor, Decision(item.filled)) for item in plan.events]
    steps[0].decision.changes.extend(ended)
    return steps
