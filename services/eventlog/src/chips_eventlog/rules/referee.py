"""The referee's settings and a room's spend at the door (spec/websocket.md; docs/adr/0083).

Who may set what: the workspace's referee is an owner's or admin's; a room's spend
ceiling and pausing or letting its agents carry on are a person's in the room; a pause for
spend and a budget warning are Chips's own (the referee service writes them as ``system``).
"""

from __future__ import annotations

from chips_common.append import Actor
from chips_common.events import (
    BudgetWarning,
    ExchangeSet,
    SpaceSpendCeilingSet,
    WorkspaceRefereeSet,
)
from chips_eventlog.refused import refuse
from chips_eventlog.rules.common import Ctx, check_member
from chips_eventlog.state import Decision, DoorState


def check_referee_set(s: DoorState, body: WorkspaceRefereeSet, actor: Actor, ctx: Ctx) -> Decision:
    """An owner or admin of the workspace sets the stop, the hold and circles."""
    me = s.participant(actor.id) if actor.kind == "person" else None
    if me is None or me.role not in ("owner", "admin"):
        refuse("forbidden", "the referee's settings are a workspace owner's or admin's")
    return Decision()


def check_spend_ceiling_set(
    s: DoorState, body: SpaceSpendCeilingSet, actor: Actor, ctx: Ctx
) -> Decision:
    """A person in the room sets what it allows a job."""
    check_member(s, body.space_id, actor)
    if actor.kind != "person":
        refuse("forbidden", "a room's spend ceiling is a person's to set")
    return Decision()


def check_exchange_set(s: DoorState, body: ExchangeSet, actor: Actor, ctx: Ctx) -> Decision:
    """A person in the room pauses its agents or lets them carry on; Chips pauses them at
    the spend ceiling."""
    if actor.kind == "system":
        if s.space(body.space_id) is None:
            refuse("not_found", "no such space", "space_id")
        if body.state != "paused" or body.why != "spend":
            refuse("invalid_event", "Chips pauses a room only for its spend", "why")
        return Decision()
    check_member(s, body.space_id, actor)
    if actor.kind != "person":
        refuse("forbidden", "pausing a room's agents, or letting them carry on, is a person's")
    if body.why == "spend" or body.spend is not None:
        refuse("invalid_event", "a person's pause says no spend", "why")
    if body.state == "paused" and body.why is None:
        return Decision({"why": "person"})
    return Decision()


def check_budget_warning(s: DoorState, body: BudgetWarning, actor: Actor, ctx: Ctx) -> Decision:
    """Chips's own warning about a job's spend."""
    if actor.kind != "system":
        refuse("forbidden", "budget warnings are Chips's to give")
    if s.space(body.space_id) is None:
        refuse("not_found", "no such space", "space_id")
    return Decision()
