"""Leaving a room stops the work (spec/websocket.md, One room at a time).

A harness taken out of a room, a room archived and a room deleted each stop the runs
there first: every such run is sent ``run.cancel`` while its harness is still in the
room, with the lanes it opened or works, and only then does the room change. A lane
cancelled so is logged in both its rooms, as one cancelled from its route card, and the
run working it elsewhere is sent ``run.cancel`` too (ADR 0017).

:func:`plan_stop` decides what to log, purely, from the runs to stop and the door state
of their lanes; :func:`stop` reads that state and stages the plan. Kept apart from
``runs.py`` and ``lanes.py`` because it needs both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, or_, select

from chips_common.append import Actor
from chips_common.db import run_tables as rt
from chips_common.db import tables as t
from chips_common.events import EventBody, LaneCancelled, MembershipRemoved, RunCancel, SpaceUpdated
from chips_eventlog.lanes import Lane, update_lane
from chips_eventlog.runs import LIVE, Run, find_run, set_state

if TYPE_CHECKING:
    from chips_eventlog.door import Door

# Why a run is stopped, by what stopped it: the words the run.cancel carries.
LEFT = "its harness left the room"
ARCHIVED = "the room was archived"
DELETED = "the room was deleted"


@dataclass
class Stop:
    """One event the stop logs, with what Chips fills in (its room)."""

    body: EventBody
    filled: dict[str, Any]


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


async def lanes_of(door: Door, run_ids: list[str]) -> list[Lane]:
    """The open lanes the runs opened or work, oldest first."""
    if not run_ids:
        return []
    c = rt.lanes.c
    rows = await door.conn.execute(
        select(rt.lanes)
        .where(
            and_(
                c.workspace_id == door.workspace_id,
                c.state == "open",
                or_(c.run_id.in_(run_ids), c.working_run_id.in_(run_ids)),
            )
        )
        .order_by(c.opened_seq)
    )
    return [
        Lane(r.id, r.run_id, r.from_space_id, r.to_space_id, r.opener_id, r.working_run_id, r.state)
        for r in rows
    ]


async def runs_to_stop(door: Door, space_id: str, harness_id: str | None) -> list[Run]:
    """The live runs of a room and its threads (whose members are the room's, so leaving
    the room leaves them too), or of one harness there; oldest first."""
    r, s = rt.runs.c, t.spaces.c
    rooms = select(s.id).where(
        and_(
            s.workspace_id == door.workspace_id,
            or_(s.id == space_id, s.parent_space_id == space_id),
        )
    )
    query = select(r.id, r.space_id, r.harness_id, r.state).where(
        and_(r.workspace_id == door.workspace_id, r.state.in_(LIVE), r.space_id.in_(rooms))
    )
    if harness_id is not None:
        query = query.where(r.harness_id == harness_id)
    rows = await door.conn.execute(query.order_by(r.started_seq))
    return [Run(row.id, row.space_id, row.harness_id, row.state) for row in rows]


async def stop(door: Door, stopping: list[Run], why: str, actor: Actor) -> list[int]:
    """Stage the stop of ``stopping`` (:func:`plan_stop`) and end what it ends in the door
    state. Returns the seqs of the ``run.cancel`` events it staged for ``stopping``."""
    if not stopping:
        return []
    lanes = await lanes_of(door, [r.id for r in stopping])
    working: dict[str, Run] = {}
    for lane in lanes:
        if lane.working_run_id is not None and lane.working_run_id not in working:
            run = await find_run(door, lane.working_run_id)
            if run is not None:
                working[run.id] = run
    plan = plan_stop(stopping, lanes, working, why)
    for run_id in plan.runs:
        await set_state(door, run_id, "cancelled")
    for lane_id in plan.lanes:
        await update_lane(door, lane_id, state="cancelled")
    mine = {r.id for r in stopping}
    seqs: list[int] = []
    for item in plan.events:
        event = door.stage(item.body, item.filled, actor)
        if isinstance(item.body, RunCancel) and item.body.run_id in mine:
            seqs.append(event["seq"])
    return seqs
