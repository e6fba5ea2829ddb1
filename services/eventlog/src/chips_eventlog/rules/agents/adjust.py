"""Attach, move and rename: a harness putting its agent in a room, a person moving or
renaming one.
"""

from __future__ import annotations

from dataclasses import replace

from chips_common.append import Actor
from chips_common.commands import AttachAgent, MoveAgent, RenameAgent
from chips_common.events import (
    AgentUpdated,
    MembershipReplaced,
)
from chips_common.rules.names import name_key
from chips_eventlog.refused import refuse
from chips_eventlog.rules.agents.given import is_given
from chips_eventlog.rules.agents.plan import BEHIND, Plan, agent_named, facts_of
from chips_eventlog.rules.agents.rooms import check_enter, enter, leave
from chips_eventlog.rules.common import Ctx, check_member
from chips_eventlog.state import (
    Change,
    DoorState,
    Participant,
    SetStanding,
)

# --- attach, move, rename ------------------------------------------------------------------


def run_attach(s: DoorState, command: AttachAgent, actor: Actor, ctx: Ctx) -> Plan:
    """``POST /v1/agents/:id/attach``: a harness puts one of its agents in a room where
    it is, in the place of another of its agents there or of itself (``replacing``). An
    agent in another room leaves it first (moved)."""
    if actor.kind != "harness":
        refuse("forbidden", "a harness attaches its own agents, with its own token")
    agent = agent_named(s, command.agent_id)
    if agent.owner_id != actor.id:
        refuse("forbidden", f"{agent.name} is another harness's agent", "agent_id")
    plan = Plan(s, ctx.seq)
    space_id = command.space_id
    if plan.standing(space_id, actor.id) is None:
        refuse(
            "forbidden",
            "your harness is not in that room: a person adds your agent there",
            "space_id",
        )
    replaced: Participant | None = None
    replacing = command.replacing
    if replacing == actor.id and plan.standing(space_id, actor.id) == BEHIND:
        # The harness's place there is the agent Chips gave it (rules/agents/given.py).
        here = [plan.participant(a) for a in plan.agents_here(space_id, actor.id)]
        stand_in = [a for a in here if a is not None and is_given(a)]
        if len(here) == 1 and stand_in:
            replacing = stand_in[0].id
    if replacing is not None:
        if replacing == actor.id:
            if plan.standing(space_id, actor.id) == BEHIND:
                refuse(
                    "invalid_event",
                    "your harness is in that room only behind its agents: name one of them",
                    "replacing",
                )
        else:
            replaced = plan.participant(replacing)
            if (
                replaced is None
                or replaced.kind != "agent"
                or replaced.owner_id != actor.id
                or plan.room_of_agent(replaced.id) != space_id
            ):
                refuse("not_found", "replacing names none of your agents in that room", "replacing")
            if facts_of(replaced).main:
                refuse(
                    "lead_room",
                    f"{replaced.name} is the Main agent: it is not replaced",
                    "replacing",
                )
    check_enter(plan, agent, space_id, moving=True)
    was = plan.room_of_agent(agent.id)
    if was is not None:
        leave(plan, agent.id, was, "moved", actor, moved_to=space_id)
    enter(plan, agent.id, space_id, actor, replacing=replacing)
    if replacing is not None:
        changes: list[Change] = []
        if replaced is None:  # the harness itself: it stands behind its agents there now
            changes.append(SetStanding(space_id, actor.id, BEHIND))
        body = MembershipReplaced(space_id=space_id, participant_id=agent.id, replaced=replacing)
        plan.add(body, actor, changes)
        if replaced is not None:
            leave(plan, replaced.id, space_id, "removed", actor)
    return plan


def may_adjust(s: DoorState, agent: Participant, actor: Actor) -> bool:
    """Whether a person may move or rename an agent: one in a room with it, its harness's
    owner, or an owner or admin of the workspace."""
    me = s.participant(actor.id)
    harness = s.participant(agent.owner_id or "")
    room = s.room_of_agent(agent.id)
    return (
        (harness is not None and harness.owner_id == actor.id)
        or (me is not None and me.role in ("owner", "admin"))
        or (room is not None and s.standing(room, actor.id) is not None)
    )


def run_move(s: DoorState, command: MoveAgent, actor: Actor, ctx: Ctx) -> Plan:
    """``POST /v1/agents/:id/move``: a person moves an agent into a room they may add to."""
    if actor.kind != "person":
        refuse("forbidden", "a person moves an agent; its harness attaches it")
    agent = agent_named(s, command.agent_id)
    standing = check_member(s, command.space_id, actor)
    if standing == "guest":
        refuse("forbidden", "a guest may talk and leave, not add anyone")
    was = s.room_of_agent(agent.id)
    if was is not None and not may_adjust(s, agent, actor):
        refuse(
            "forbidden",
            "an agent is moved by someone in its room, its harness's owner, or a workspace "
            "owner or admin",
        )
    plan = Plan(s, ctx.seq)
    check_enter(plan, agent, command.space_id, moving=True)
    if was is not None:
        leave(plan, agent.id, was, "moved", actor, moved_to=command.space_id)
    enter(plan, agent.id, command.space_id, actor)
    return plan


def run_rename(s: DoorState, command: RenameAgent, actor: Actor, ctx: Ctx) -> Plan:
    """``PATCH /v1/agents/:id``: a person renames an agent, and the name holds."""
    if actor.kind != "person":
        refuse("forbidden", "a person renames an agent; its harness registers it")
    agent = agent_named(s, command.agent_id)
    if not may_adjust(s, agent, actor):
        refuse(
            "forbidden",
            "an agent is renamed by someone in its room, its harness's owner, or a workspace "
            "owner or admin",
        )
    name = " ".join(command.name.split())
    if not name:
        refuse("invalid_event", "a name has something in it", "name")
    if name == agent.name:
        refuse("invalid_event", f"{agent.name} is its name already", "name")
    taken = {name_key(n) for pid, n in s.directory() if pid != agent.id}
    if name_key(name) in taken:
        refuse("invalid_event", f"somebody in this workspace is called {name} already", "name")
    facts = replace(facts_of(agent), name_by=actor.id)
    plan = Plan(s, ctx.seq)
    updated = AgentUpdated(
        agent_id=agent.id, harness_id=agent.owner_id or "", name=name, name_by=actor.id
    )
    plan.add(updated, actor, [plan.put_agent(replace(agent, name=name, agent=facts))])
    return plan
