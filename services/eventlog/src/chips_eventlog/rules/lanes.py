"""The rules of lanes: who opens one, who ends it, and that it ends once.

docs/product/jacobian-channel.md (a placement, ``hand_down``, a ``hand_down`` that does not wait,
Cancel a lane from its route card) and ADR 0017.

A lane event is about two rooms, and scope delivers an event by its one ``space_id``; so
each is logged once in each room (ADR 0017): the copy at home, in the room the lane went
to, and its twin in the room it was opened from. A lane cancelled while a run works it
also logs ``run.cancel`` for that run; the run that opened the lane carries on.
:func:`check_lane` returns those events as steps; :func:`take_lane` decides a run that
names the lane it works (``rules.runs`` calls it for ``run.started``).
"""

from __future__ import annotations

from dataclasses import replace

from chips_common.append import Actor
from chips_common.events import (
    LANE_TYPES,
    LaneCancelled,
    LaneCompleted,
    LaneFailed,
    LaneOpened,
    RunCancel,
    RunStarted,
)
from chips_eventlog.refused import refuse
from chips_eventlog.rules.common import Ctx, Step, harness_of, in_room
from chips_eventlog.state import LIVE, Change, Decision, DoorState, Lane, PutLane, PutRun, Run

LANE_EVENTS = LANE_TYPES
EventBodyOfLane = LaneOpened | LaneCompleted | LaneFailed | LaneCancelled

# The state each event leaves a lane in; every one of them is final but the first.
NEXT_STATE = {
    "lane.completed": "completed",
    "lane.failed": "failed",
    "lane.cancelled": "cancelled",
}


def check_lane(s: DoorState, body: EventBodyOfLane, actor: Actor, ctx: Ctx) -> list[Step]:
    """Decide one lane event; it is logged in both of the lane's rooms (ADR 0017).

    The copy at home (the room it went to) comes first, then its twin in the room it was
    opened from, then the ``run.cancel`` a cancel sends to the run working the lane.
    """
    stop: Run | None = None
    match body:
        case LaneOpened():
            lane = check_opened(s, body, actor, ctx)
        case LaneCancelled():
            lane, stop = check_cancelled(s, body, actor)
        case _:
            lane = check_ended(s, body, actor)
    if body.type in NEXT_STATE:
        lane = replace(lane, state=NEXT_STATE[body.type])
    changes: list[Change] = [PutLane(lane)]
    if stop is not None:
        changes.append(PutRun(replace(stop, state="cancelled")))
    rooms = {"from_space_id": lane.from_space_id, "to_space_id": lane.to_space_id}
    steps = [
        Step(body, actor, Decision({**rooms, "space_id": lane.to_space_id}, changes)),
        Step(body, actor, Decision({**rooms, "space_id": lane.from_space_id})),
    ]
    if stop is not None:
        cancel = RunCancel(run_id=stop.id, why=f"lane {lane.id} was cancelled")
        steps.append(Step(cancel, actor, Decision({"space_id": stop.space_id})))
    return steps


def check_opened(s: DoorState, body: LaneOpened, actor: Actor, ctx: Ctx) -> Lane:
    """A lane is opened from a room the opener is in (its run's, for a harness's run) into
    another room it is in too."""
    if actor.kind not in ("person", "harness", "agent"):
        refuse("forbidden", "a lane is opened by a person or by a harness's run")
    opener = harness_of(actor) or actor.id
    if s.lane(body.lane_id) is not None:
        refuse("invalid_event", f"{body.lane_id} was opened already; name a new lane", "lane_id")
    from_space = body.from_space_id
    if body.run_id is not None:
        run = s.run(body.run_id)
        if run is None:
            refuse("not_found", f"no run {body.run_id} was started in this workspace", "run_id")
        if opener != run.harness_id:
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
    if not in_room(s, from_space, actor):
        refuse("forbidden", "you are not in the room the lane is opened from", "from_space_id")
    target = s.space(body.to_space_id)
    if target is None:
        refuse("not_found", f"no room {body.to_space_id} to open a lane into", "to_space_id")
    if target.state == "closed":
        refuse(
            "invalid_event",
            "the room the lane goes to is archived; unarchive it first",
            "to_space_id",
        )
    if not in_room(s, body.to_space_id, actor):
        refuse(
            "forbidden",
            "you are not in the room the lane goes to; a lane goes only into a room you are in",
            "to_space_id",
        )
    return Lane(
        body.lane_id, body.run_id, from_space, body.to_space_id, opener, None, "open", ctx.seq
    )


def lane_for(s: DoorState, body: EventBodyOfLane) -> Lane:
    """The open lane ``body`` names; completed, failed and cancelled are final."""
    lane = s.lane(body.lane_id)
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


def check_ended(s: DoorState, body: LaneCompleted | LaneFailed, actor: Actor) -> Lane:
    """Only the harness working a lane ends it with its answer, from the room it went to."""
    lane = lane_for(s, body)
    harness = harness_of(actor)
    if harness is None:
        refuse("forbidden", f"{body.type} is written by the harness working the lane", "type")
    if not in_room(s, lane.to_space_id, actor):
        refuse(
            "forbidden",
            f"you are not in the room {lane.id} went to; the harness working it there ends it",
            "lane_id",
        )
    if lane.working_run_id is not None:
        run = s.run(lane.working_run_id)
        if run is not None and run.harness_id != harness:
            refuse("forbidden", f"{lane.id} is worked by another harness's run", "lane_id")
    return lane


def check_cancelled(s: DoorState, body: LaneCancelled, actor: Actor) -> tuple[Lane, Run | None]:
    """Cancel from the route card: a person in either room, or the harness that opened the
    lane or works it. The run working it is stopped; the run that opened it is not."""
    lane = lane_for(s, body)
    working = s.run(lane.working_run_id) if lane.working_run_id else None
    if actor.kind == "person":
        rooms = (lane.to_space_id, lane.from_space_id)
        if all(s.standing(room, actor.id) is None for room in rooms):
            refuse(
                "forbidden",
                f"{lane.id} is cancelled from its route card, by a person in one of its rooms",
                "lane_id",
            )
    elif (me := harness_of(actor) or actor.id) != lane.opener_id and (
        working is None or working.harness_id != me
    ):
        refuse(
            "forbidden",
            f"{lane.id} is cancelled by the people of its rooms, or the harness that opened it "
            "or works it",
            "lane_id",
        )
    stop = working if working is not None and working.state in LIVE else None
    return lane, stop


def take_lane(s: DoorState, body: RunStarted) -> PutLane:
    """A run that names its lane works it: the lane is open, went to the run's room, and no
    other live run works it. The run is who a cancel from the route card stops."""
    assert body.lane_id is not None
    lane = s.lane(body.lane_id)
    if lane is None:
        refuse("not_found", f"no lane {body.lane_id} was opened in this workspace", "lane_id")
    if lane.state != "open":
        refuse("invalid_event", f"{lane.id} has ended ({lane.state}); no run works it", "lane_id")
    if lane.to_space_id != body.space_id:
        refuse("invalid_event", f"{lane.id} went to another room; it is worked there", "space_id")
    if lane.working_run_id is not None:
        working = s.run(lane.working_run_id)
        if working is not None and working.state in LIVE:
            refuse("invalid_event", f"{lane.id} is worked by {working.id} already", "lane_id")
    return PutLane(replace(lane, working_run_id=body.run_id))
