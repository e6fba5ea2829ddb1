"""The rules of lanes at the door: who opens one, who ends it, and that it ends once.

spec/jacobian-channel.md (a placement, ``hand_down``, a ``hand_down`` that does not wait,
Cancel a lane from its route card) and ADR 0017. Decided against the door state
(``run_tables.lanes``) in the append transaction, like every rule.

A lane event is about two rooms, and scope delivers an event by its one ``space_id``; so
each is logged once in each room (ADR 0017): the copy at home, in the room the lane went
to, and its twin in the room it was opened from. A lane cancelled while a run works it
also logs ``run.cancel`` for that run; the run that opened the lane carries on.

Kept apart from ``door.py``: ``Door.admit`` hands every lane event to :func:`admit_lane`,
and ``runs.check_run_started`` calls :func:`take_lane` for a run that names its lane.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, insert, select, update

from chips_common.append import Actor
from chips_common.db import run_tables as rt
from chips_common.events import (
    LANE_TYPES,
    LaneCancelled,
    LaneCompleted,
    LaneFailed,
    LaneOpened,
    RunCancel,
    RunStarted,
)
from chips_eventlog.runs import LIVE, Run, find_run, refuse, set_state

if TYPE_CHECKING:
    from chips_eventlog.door import Door

LANE_EVENTS = LANE_TYPES
EventBodyOfLane = LaneOpened | LaneCompleted | LaneFailed | LaneCancelled

# The state each event leaves a lane in; every one of them is final but the first.
NEXT_STATE = {
    "lane.completed": "completed",
    "lane.failed": "failed",
    "lane.cancelled": "cancelled",
}


@dataclass
class Lane:
    id: str
    run_id: str | None
    from_space_id: str
    to_space_id: str
    opener_id: str
    working_run_id: str | None
    state: str


async def find_lane(door: Door, lane_id: str) -> Lane | None:
    c = rt.lanes.c
    row = (
        await door.conn.execute(
            select(rt.lanes).where(and_(c.workspace_id == door.workspace_id, c.id == lane_id))
        )
    ).first()
    if row is None:
        return None
    return Lane(
        row.id,
        row.run_id,
        row.from_space_id,
        row.to_space_id,
        row.opener_id,
        row.working_run_id,
        row.state,
    )


async def update_lane(door: Door, lane_id: str, **values: Any) -> None:
    c = rt.lanes.c
    await door.conn.execute(
        update(rt.lanes)
        .where(and_(c.workspace_id == door.workspace_id, c.id == lane_id))
        .values(**values)
    )


# --- the door's entry point ----------------------------------------------------------------


async def admit_lane(door: Door, body: EventBodyOfLane, actor: Actor) -> None:
    """Decide one lane event and log it in both of the lane's rooms (ADR 0017).

    The copy at home (the room it went to) comes first, then its twin in the room it was
    opened from, then the ``run.cancel`` a cancel sends to the run working the lane.
    """
    stop: Run | None = None
    async with door.conn.begin_nested():
        match body:
            case LaneOpened():
                lane = await check_opened(door, body, actor)
            case LaneCancelled():
                lane, stop = await check_cancelled(door, body, actor)
            case _:
                lane = await check_ended(door, body, actor)
        if body.type in NEXT_STATE:
            await update_lane(door, lane.id, state=NEXT_STATE[body.type])
        if stop is not None:
            await set_state(door, stop.id, "cancelled")
    rooms = {"from_space_id": lane.from_space_id, "to_space_id": lane.to_space_id}
    door.stage(body, {**rooms, "space_id": lane.to_space_id}, actor)
    door.stage(body, {**rooms, "space_id": lane.from_space_id}, actor)
    if stop is not None:
        cancel = RunCancel(run_id=stop.id, why=f"lane {lane.id} was cancelled")
        door.stage(cancel, {"space_id": stop.space_id}, actor)


# --- the rules -------------------------------------------------------------------------------


async def check_opened(door: Door, body: LaneOpened, actor: Actor) -> Lane:
    """A lane is opened from a room the opener is in (its run's, for a harness's run) into
    another room it is in too."""
    if actor.kind not in ("person", "harness"):
        refuse("forbidden", "a lane is opened by a person or by a harness's run")
    if await find_lane(door, body.lane_id) is not None:
        refuse("invalid_event", f"{body.lane_id} was opened already; name a new lane", "lane_id")
    from_space = body.from_space_id
    if body.run_id is not None:
        run = await find_run(door, body.run_id)
        if run is None:
            refuse("not_found", f"no run {body.run_id} was started in this workspace", "run_id")
        if actor.id != run.harness_id:
            refuse("forbidden", f"{run.id} is not your run; a lane is opened from your own run")
        if run.state not in LIVE:
            refuse("invalid_event", f"{run.id} has ended ({run.state}); it opens no lane", "run_id")
        if from_space is not None and from_space != run.space_id:
            refuse("invalid_event", f"{run.id} is a run of another room", "from_space_id")
        from_space = run.space_id
    elif from_space is None:
        refuse(
            "invalid_event",
            "a lane names the room it is opened from: from_space_id, or the run_id of a run there",
            "from_space_id",
        )
    if body.space_id is not None and body.space_id != body.to_space_id:
        refuse("invalid_event", "a lane is at home in to_space_id; leave space_id out", "space_id")
    if from_space == body.to_space_id:
        refuse("invalid_event", "a lane goes into another room than its own", "to_space_id")
    if await door.standing(from_space, actor.id) is None:
        refuse("forbidden", "you are not in the room the lane is opened from", "from_space_id")
    target = await door.space(body.to_space_id)
    if target is None:
        refuse("not_found", f"no room {body.to_space_id} to open a lane into", "to_space_id")
    if target.state == "closed":
        refuse(
            "invalid_event",
            "the room the lane goes to is archived; unarchive it first",
            "to_space_id",
        )
    if await door.standing(body.to_space_id, actor.id) is None:
        refuse(
            "forbidden",
            "you are not in the room the lane goes to; a lane goes only into a room you are in",
            "to_space_id",
        )
    await door.conn.execute(
        insert(rt.lanes).values(
            workspace_id=door.workspace_id,
            id=body.lane_id,
            run_id=body.run_id,
            from_space_id=from_space,
            to_space_id=body.to_space_id,
            opener_id=actor.id,
            state="open",
            opened_seq=door.head_seq + 1,
        )
    )
    return Lane(body.lane_id, body.run_id, from_space, body.to_space_id, actor.id, None, "open")


async def lane_for(door: Door, body: EventBodyOfLane) -> Lane:
    """The open lane ``body`` names; completed, failed and cancelled are final."""
    lane = await find_lane(door, body.lane_id)
    if lane is None:
        refuse("not_found", f"no lane {body.lane_id} was opened in this workspace", "lane_id")
    if body.space_id is not None and body.space_id not in (lane.to_space_id, lane.from_space_id):
        refuse("invalid_event", f"{lane.id} is a lane of other rooms", "space_id")
    if lane.state != "open":
        refuse(
            "invalid_event",
            f"{lane.id} has ended ({lane.state}); it takes nothing more, {body.type} included",
            "lane_id",
        )
    return lane


async def check_ended(door: Door, body: LaneCompleted | LaneFailed, actor: Actor) -> Lane:
    """Only the harness working a lane ends it with its answer, from the room it went to."""
    lane = await lane_for(door, body)
    if actor.kind != "harness":
        refuse("forbidden", f"{body.type} is written by the harness working the lane", "type")
    if await door.standing(lane.to_space_id, actor.id) is None:
        refuse(
            "forbidden",
            f"you are not in the room {lane.id} went to; the harness working it there ends it",
            "lane_id",
        )
    if lane.working_run_id is not None:
        run = await find_run(door, lane.working_run_id)
        if run is not None and run.harness_id != actor.id:
            refuse("forbidden", f"{lane.id} is worked by another harness's run", "lane_id")
    return lane


async def check_cancelled(door: Door, body: LaneCancelled, actor: Actor) -> tuple[Lane, Run | None]:
    """Cancel from the route card: a person in either room, or the harness that opened the
    lane or works it. The run working it is stopped; the run that opened it is not."""
    lane = await lane_for(door, body)
    working = await find_run(door, lane.working_run_id) if lane.working_run_id else None
    if actor.kind == "person":
        rooms = (lane.to_space_id, lane.from_space_id)
        if all([await door.standing(room, actor.id) is None for room in rooms]):
            refuse(
                "forbidden",
                f"{lane.id} is cancelled from its route card, by a person in one of its rooms",
                "lane_id",
            )
    elif actor.id != lane.opener_id and (working is None or working.harness_id != actor.id):
        refuse(
            "forbidden",
            f"{lane.id} is cancelled by the people of its rooms, or the harness that opened it "
            "or works it",
            "lane_id",
        )
    stop = working if working is not None and working.state in LIVE else None
    return lane, stop


async def take_lane(door: Door, body: RunStarted) -> None:
    """A run that names its lane works it: the lane is open, went to the run's room, and no
    other live run works it. The run is who a cancel from the route card stops."""
    assert body.lane_id is not None
    lane = await find_lane(door, body.lane_id)
    if lane is None:
        refuse("not_found", f"no lane {body.lane_id} was opened in this workspace", "lane_id")
    if lane.state != "open":
        refuse("invalid_event", f"{lane.id} has ended ({lane.state}); no run works it", "lane_id")
    if lane.to_space_id != body.space_id:
        refuse("invalid_event", f"{lane.id} went to another room; it is worked there", "space_id")
    if lane.working_run_id is not None:
        working = await find_run(door, lane.working_run_id)
        if working is not None and working.state in LIVE:
            refuse("invalid_event", f"{lane.id} is worked by {working.id} already", "lane_id")
    await update_lane(door, lane.id, working_run_id=body.run_id)
