"""The agent Chips gives a harness with none of its own: one per room (docs/adr/0146, 0154).

A harness that has registered no agent, whether it declared ``agents`` or not, is given
one, named after it, in each room it is in as itself: its direct room, a room a person
adds it to or opens with it, a room it opens or claims by key, one it stood in before it
declared ``agents`` (the declaration gives it one there), and one unarchived with it in.
A harness that has not declared ``agents`` is shown its given agents as its own id (the
gateway's pre-agents view, ``chips_common.rules.agents_view``), so nothing changes for it.
Not a room a person asked of it from the + until it claims that room, since the harness
itself is who such a room holds until then.

Giving is logged like any agent's coming: ``agent.registered`` (key ``chips:<space id>``,
the name numbered where another participant has it), its ``membership.added`` and
``agent.attached`` by the one rule of entering, then ``membership.replaced``: the harness
stands behind its agent there from then on, and what it said there reads as the agent's.
Each is decided after what brought the harness in was, by :func:`gifts_after`.
"""

from __future__ import annotations

from collections.abc import Iterable

from chips_common.append import Actor
from chips_common.commands import GiveAgents
from chips_common.events import (
    AgentRegistered,
    MembershipReplaced,
    SpaceLeadSet,
)
from chips_common.events.wire import EventJson, event_json
from chips_common.ids import new_id
from chips_common.rules.names import free_name
from chips_eventlog.refused import refuse
from chips_eventlog.rules.agents.plan import BEHIND, Plan
from chips_eventlog.rules.agents.rooms import enter, refusal_to_enter
from chips_eventlog.rules.common import Ctx
from chips_eventlog.state import AgentFacts, DoorState, Participant

# The key of an agent Chips gave a harness for a room: ``chips:<space id>``. A harness's
# own keys never start so (rules/agents/register.py refuses them).
GIVEN = "chips:"


def is_given(agent: Participant) -> bool:
    return agent.agent is not None and agent.agent.key.startswith(GIVEN)


def has_own_agents(s: DoorState, harness_id: str) -> bool:
    """Whether the harness registered any agent itself (given ones are not its own)."""
    return any(not is_given(a) for a in s.agents_of(harness_id))


def gives_agent(s: DoorState, harness_id: str, space_id: str, *, claiming: bool = False) -> bool:
    """Whether the harness is given an agent in the room now.

    ``claiming``: the harness is claiming the room a person asked of it, so the ask no
    longer holds the harness itself there.
    """
    harness = s.participant(harness_id)
    if harness is None or harness.kind != "harness":
        return False
    if has_own_agents(s, harness_id):
        return False
    space = s.space(space_id)
    if space is None or space.state != "open" or space.parent_space_id is not None:
        return False
    # As itself; or behind the agent it was given there, where that agent is gone (an
    # archive released it and it was moved elsewhere before the room came back).
    if s.standing(space_id, harness_id) not in ("member", "owner", BEHIND):
        return False
    if space.asked_of == harness_id and space.key is None and not claiming:
        return False  # the harness itself is who the room holds, until it claims it
    return not any(
        p.kind == "agent" and p.owner_id == harness_id
        for p in (s.participant(pid) for pid in s.members.get(space_id, {}))
        if p is not None
    )


def give(plan: Plan, harness: Participant, space_id: str, *, lead: bool = False) -> str | None:
    """The steps of giving ``harness`` its agent in ``space_id``; the agent's id, or None
    when the one rule of entering keeps it out (a Main room)."""
    taken = [n for pid, n in plan.s.directory() if pid != harness.id] + plan.names_made()
    name = free_name(harness.name, taken)
    agent_id = new_id("agt")
    facts = AgentFacts(key=GIVEN + space_id)
    agent = Participant(agent_id, "agent", "member", harness.id, name, plan.seq, agent=facts)
    if refusal_to_enter(plan, agent, space_id) is not None:
        return None
    me = Actor(kind="harness", id=harness.id)
    registered = AgentRegistered(
        agent_id=agent_id, harness_id=harness.id, key=facts.key, name=name, space_id=space_id
    )
    plan.add(registered, me, [plan.put_agent(agent)])
    enter(plan, agent_id, space_id, me)
    replaced = MembershipReplaced(space_id=space_id, participant_id=agent_id, replaced=harness.id)
    plan.add(replaced, me, [plan.stand(space_id, harness.id, BEHIND)])
    if lead:
        plan.add(SpaceLeadSet(space_id=space_id, agent_id=agent_id), me)
    return agent_id


def candidates(s: DoorState, event: EventJson) -> list[tuple[str, str, bool]]:
    """``(harness id, space id, claimed)`` that a staged ``event`` may have brought a
    harness into as itself."""
    kind = event.get("type")
    space_id = event.get("space_id")
    if kind == "harness.declared":
        harness_id = str(event["harness_id"])
        return [(harness_id, room, False) for room in rooms_of(s, harness_id)]
    if not isinstance(space_id, str):
        return []
    if kind == "membership.added":
        return [(str(event["participant_id"]), space_id, False)]
    if kind == "space.claimed":
        return [(str(event["actor"]["id"]), space_id, True)]
    if kind in ("space.created", "space.updated"):
        return [(pid, space_id, False) for pid in s.members.get(space_id, {})]
    return []


def rooms_of(s: DoorState, harness_id: str) -> list[str]:
    """The rooms the harness stands in as itself, oldest first."""
    found = [
        (m.since_seq, room)
        for room, here in s.members.items()
        for pid, m in here.items()
        if pid == harness_id and m.standing in ("member", "owner")
    ]
    return [room for _, room in sorted(found)]


def gifts_after(s: DoorState, events: Iterable[EventJson], seq: int) -> Plan | None:
    """The agents given after ``events`` were staged (the door state as they left it), as
    one plan beginning at ``seq``; None when nobody is given one."""
    plan: Plan | None = None
    for event in events:
        for harness_id, space_id, claimed in candidates(s, event):
            if not gives_agent(s, harness_id, space_id, claiming=claimed):
                continue
            harness = s.participant(harness_id)
            assert harness is not None
            plan = plan or Plan(s, seq)
            if plan.agents_here(space_id, harness_id):
                continue
            give(plan, harness, space_id, lead=claimed)
    return plan


def run_give(s: DoorState, command: GiveAgents, actor: Actor, ctx: Ctx) -> Plan:
    """``agents.give``: every harness owed an agent in a room it stands in is given it
    there, oldest room first; nothing is logged when none is owed (so sending it again is
    harmless). Chips's own, sent once per workspace after the upgrade that brought the rule
    in (the referee reads ``agents_to_give``, migrations 1700, 1720 and 1740)."""
    if actor.kind not in ("system", "operator"):
        refuse("forbidden", "Chips gives harnesses their agents itself")
    harnesses = sorted(
        (p for p in s.participants.values() if p.kind == "harness"),
        key=lambda p: (p.joined_seq, p.id),
    )
    # Read as a staged harness.declared is: only its type and harness.
    declared = [
        event_json(
            {"type": "harness.declared", "harness_id": h.id, "capabilities": list(h.capabilities)}
        )
        for h in harnesses
    ]
    return gifts_after(s, declared, ctx.seq) or Plan(s, ctx.seq)
