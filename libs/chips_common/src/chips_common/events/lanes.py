"""Lanes: work handed from one room into another, linked both ways.

docs/product/jacobian-channel.md (a placement, a ``hand_down``, a ``hand_down`` that does not
wait) and docs/product/messages.md (a task "becomes a run, or a lane"). A lane is opened from a
room — by a run of a harness there, or by a person — into another room, where it is at
home: the route card and the answer show in both. It can outlive the run that opened it,
and it ends once: completed with a summary and its cost, failed with why, or cancelled
(which stops the run working it, while the opener's run carries on).

Every lane event is logged once in each of the lane's two rooms (ADR 0017): the copy at
home (``space_id`` is ``to_space_id``) and its twin in the room it was opened from
(``space_id`` is ``from_space_id``). Chips fills in ``space_id``, ``from_space_id`` and
``to_space_id`` on each copy, so scope by room delivers a lane to the members of both.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from chips_common.events.base import EventBody, register
from chips_common.events.messages import TaskCard
from chips_common.events.runs import LaneId, Long, RunId, Short


class _LaneEvent(EventBody):
    """The fields every lane event carries once Chips has filled them in."""

    lane_id: LaneId
    space_id: str | None = None
    from_space_id: str | None = None
    to_space_id: str | None = None


@register
class LaneOpened(_LaneEvent):
    """A task that opens a lane from one room into another (``to_space_id``).

    ``run_id`` is the opener's run, when a run opened it (its room is the room the lane is
    opened from, so ``from_space_id`` may be left out); a person opens one with
    ``from_space_id``. ``task`` is the task card: goal, constraints, deadline, autonomy.
    ``worker`` is who the lane is called by in the room it goes to (a Jacobian worker's
    name). The opener must be in both rooms.
    """

    type: Literal["lane.opened"] = "lane.opened"
    to_space_id: str
    run_id: RunId | None = None
    task: TaskCard
    worker: Short | None = None


@register
class LaneCompleted(_LaneEvent):
    """A lane ended with its answer: ``summary``, and what it cost when that is known.

    Written by the harness working it, in the room it went to; the opener's run may have
    ended long before (a hand-off that does not wait).
    """

    type: Literal["lane.completed"] = "lane.completed"
    summary: Long
    cost_usd: float | None = Field(default=None, ge=0, le=10**6)


@register
class LaneFailed(_LaneEvent):
    """A lane ended with what went wrong, written by the harness working it."""

    type: Literal["lane.failed"] = "lane.failed"
    why: Long


@register
class LaneCancelled(_LaneEvent):
    """A lane was cancelled from its route card, by a person in either of its rooms (or by
    the harness that opened it). The run working it is sent ``run.cancel``; the run that
    opened it carries on."""

    type: Literal["lane.cancelled"] = "lane.cancelled"
    why: Short | None = None


LANE_TYPES = (LaneOpened, LaneCompleted, LaneFailed, LaneCancelled)
