"""The referee's settings and a room's spend at the door (docs/product/websocket.md; docs/adr/0083).

Who may set what: the workspace's referee is an owner's or admin's; a room's spend
ceiling and pausing or letting its agents carry on are a person's in the room; a pause for
spend and a budget warning are Chips's own (the referee service writes them as ``system``).
"""

from __future__ import annotations

from pydantic import JsonValue

from chips_common.append import Actor
from chips_common.events import (
    BudgetWarning,
    EventBody,
    ExchangeSet,
    LeadHanded,
    MessagePost,
    RoomIdle,
    RoomWorking,
    SpaceLeadSet,
    SpaceSpendCeilingSet,
    WorkspaceRefereeSet,
)
from chips_common.rules.exchanges import (
    AgentMadeNew,
    ExchangeSettings,
    Happened,
    Paused,
    PersonActed,
    Resumed,
    Said,
    speaks_for_itself,
    step,
)
from chips_eventlog.refused import refuse
from chips_eventlog.rules.common import Ctx, check_member
from chips_eventlog.state import Change, Decision, DoorState, PutExchange, SetReferee

# Fields of a message.post only Chips writes (the referee's verdict).
VERDICT_FIELDS = ("exchange", "held", "held_for")
# What an agent makes new outside a message: a question or an approval put to a person.
MADE_NEW = ("question.ask", "approval.request")


def check_referee_set(s: DoorState, body: WorkspaceRefereeSet, actor: Actor, ctx: Ctx) -> Decision:
    """An owner or admin of the workspace sets the stop, the hold and circles."""
    me = s.participant(actor.id) if actor.kind == "person" else None
    if me is None or me.role not in ("owner", "admin"):
        refuse("forbidden", "the referee's settings are a workspace owner's or admin's")
    settings = ExchangeSettings.from_body(body.model_dump())
    return Decision(changes=[SetReferee(settings)])


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


def check_lead_set(s: DoorState, body: SpaceLeadSet, actor: Actor, ctx: Ctx) -> Decision:
    """A person in the room chooses its lead: one of the agents in it, or none (docs/adr/0090).

    A harness in a room is its one agent there until it has agents (ADR 0070), so a
    harness shown in the room may lead it too.
    """
    check_member(s, body.space_id, actor)
    if actor.kind != "person":
        refuse("forbidden", "a room's lead is chosen by a person in it")
    if body.agent_id is not None:
        here = {m.id: m for m in s.room_members(body.space_id)}
        chosen = one_agent_here(s, body.space_id, body.agent_id) or body.agent_id
        member = here.get(chosen)
        if member is None or not speaks_for_itself(member.kind):
            refuse(
                "invalid_event",
                "a room's lead is one of the agents in it, and that is not one",
                "agent_id",
            )
        if chosen != body.agent_id:
            return Decision({"agent_id": chosen})
    return Decision()


def one_agent_here(s: DoorState, space_id: str, harness_id: str) -> str | None:
    """A harness's one agent in the room, which naming the harness chooses (docs/adr/0154:
    a person's client that knows the harness's id, not the agent Chips gave it there)."""
    if not harness_id.startswith("hrn_"):
        return None
    mine = [
        pid
        for pid in s.members.get(space_id, {})
        if (p := s.participant(pid)) is not None and p.kind == "agent" and p.owner_id == harness_id
    ]
    return mine[0] if len(mine) == 1 else None


def check_room_working(
    s: DoorState, body: RoomWorking | RoomIdle, actor: Actor, ctx: Ctx
) -> Decision:
    """Who is working in a room is Chips's to say (the referee writes it)."""
    if actor.kind != "system":
        refuse("forbidden", "who is working in a room is Chips's to say")
    if s.space(body.space_id) is None:
        refuse("not_found", "no such space", "space_id")
    return Decision()


def check_lead_handed(s: DoorState, body: LeadHanded, actor: Actor, ctx: Ctx) -> Decision:
    """Chips hands the lead what is nobody's turn: never in a paused room, and only to an
    agent still in it (docs/product/websocket.md, Who leads; docs/adr/0090)."""
    if actor.kind != "system":
        refuse("forbidden", "handing the lead what is nobody's turn is Chips's")
    if s.space(body.space_id) is None:
        refuse("not_found", "no such space", "space_id")
    if s.exchange(body.space_id).paused is not None:
        refuse("invalid_event", "the room is paused: the lead is handed nothing", "space_id")
    if body.agent_id not in {m.id for m in s.room_members(body.space_id)}:
        refuse("invalid_event", "the lead is no longer in the room", "agent_id")
    return Decision()


# --- counting at the door (rules/exchanges.py) -------------------------------------------


def count_post(
    s: DoorState,
    body: MessagePost,
    actor: Actor,
    decision: Decision,
    attachments: list[dict[str, JsonValue]] | None,
) -> Decision:
    """Count a post as the referee does, and write its verdict into the event.

    A message an agent sends agents gets ``exchange`` from half the stop or on a circle;
    past the hold, or while the room is paused, it is held: for nobody (``addressed_to``
    empty), ``held: true``, and ``held_for`` whom it was for, so that a person's next act
    can hand it over (docs/product/websocket.md; docs/adr/0083).
    """
    for name in VERDICT_FIELDS:
        if getattr(body, name) is not None:
            refuse("invalid_event", f"{name} is filled in by Chips; leave it out", name)
    space_id = body.space_id
    kinds = {m.id: m.kind for m in s.room_members(space_id)}
    addressed = list(decision.filled.get("addressed_to") or [])
    to_agents = any(pid != actor.id and speaks_for_itself(kinds.get(pid, "")) for pid in addressed)
    new_files = old_files = 0
    for attachment in attachments or []:
        versions = s.files.get((space_id, str(attachment["name"])), ())
        if any(v.sha256 == attachment["sha256"] for v in versions):
            old_files += 1
        else:
            new_files += 1
    said = Said(
        sender=actor.id,
        sender_kind=actor.kind,
        to_agents=to_agents,
        words=body.text or "",
        new_files=new_files,
        old_files=old_files,
        asks_person=body.kind in ("question", "approval"),
    )
    before = s.exchange(space_id)
    after, verdict = step(before, said, s.referee)
    if after != before:
        decision.changes.append(PutExchange(space_id, after))
    if verdict is None:
        return decision
    facts: dict[str, object] = dict(verdict.facts)
    if verdict.note is not None:
        facts["note"] = verdict.note
    if verdict.held:
        decision.filled["addressed_to"] = []
        decision.filled["held"] = True
        decision.filled["held_for"] = addressed
        decision.filled["exchange"] = facts
    elif verdict.note is not None:
        decision.filled["exchange"] = facts
    return decision


def happened_in_room(body: EventBody, actor: Actor) -> list[Happened]:
    """What an event other than a post tells the room's exchange."""
    if body.type == "exchange.set" and isinstance(body, ExchangeSet):
        if body.state == "running":
            return [Resumed()]
        acted: list[Happened] = [PersonActed()] if actor.kind == "person" else []
        return [*acted, Paused("spend" if body.why == "spend" else "person")]
    if actor.kind == "person":
        return [PersonActed()]
    if body.type in MADE_NEW and speaks_for_itself(actor.kind):
        return [AgentMadeNew()]
    return []


def follow_room(s: DoorState, body: EventBody, actor: Actor, space_id: str | None) -> list[Change]:
    """The exchange's change for an event logged in a room (a post is counted by its rule)."""
    if space_id is None or body.type in ("message.post", "turn.passed"):
        return []
    happenings = happened_in_room(body, actor)
    if not happenings:
        return []
    before = s.exchange(space_id)
    after = before
    for happened in happenings:
        after, _ = step(after, happened, s.referee)
    return [PutExchange(space_id, after)] if after != before else []
