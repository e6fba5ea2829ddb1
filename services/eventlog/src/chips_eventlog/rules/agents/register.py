"""Registering agents (``POST /v1/harnesses/:id/agents``): a new key a new agent, the
same key the same agent renamed, archived or brought back.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from chips_common.append import Actor
from chips_common.clock import iso
from chips_common.commands import RegisterAgent
from chips_common.events import (
    AgentRegistered,
    AgentUpdated,
    MembershipReplaced,
    SpaceUpdated,
)
from chips_common.ids import new_id
from chips_common.rules.faces import FaceImage, face_refusal
from chips_common.rules.names import free_name
from chips_eventlog.refused import refuse, refuse_if
from chips_eventlog.rules.agents.given import GIVEN, is_given
from chips_eventlog.rules.agents.plan import Plan, facts_of, main_agent, same_name
from chips_eventlog.rules.agents.rooms import enter, leave, refusal_to_enter
from chips_eventlog.rules.common import Ctx
from chips_eventlog.state import (
    AgentFacts,
    Ask,
    Change,
    DoorState,
    Participant,
    PutAsk,
)

# --- registering ---------------------------------------------------------------------------


def run_register(s: DoorState, command: RegisterAgent, actor: Actor, ctx: Ctx) -> Plan:
    """``POST /v1/harnesses/:id/agents``: the same key is the same agent (renamed,
    archived or brought back as asked); a new key a new agent, numbered when its name is
    taken, joining the room a fork or a new agent was asked for when it came in time."""
    harness = s.participant(command.harness_id)
    if actor.kind != "harness" or actor.id != command.harness_id:
        refuse("forbidden", "a harness registers its own agents, with its own token")
    if harness is None or harness.kind != "harness":
        refuse("not_found", "no such harness in this workspace", "harness_id")
    if command.key.startswith(GIVEN):
        refuse("invalid_event", f"a key starting {GIVEN} is one Chips gives", "key")
    if command.face is not None:
        refuse_if(face_refusal(command.face, harness.id, face_image(s, command.face)))
    plan = Plan(s, ctx.seq)
    agent = s.agent_by_key(harness.id, command.key)
    if agent is None:
        register_new(plan, harness, command, actor, ctx)
    else:
        register_again(plan, agent, command, actor)
    return plan


def face_image(s: DoorState, face: str) -> FaceImage | None:
    """The upload a face names, as the batch read it (``state_prefetch``), if any."""
    upload = s.uploads.get(face)
    if upload is None:
        return None
    return FaceImage(upload.uploader_id, upload.kind, upload.mime_type, upload.byte_size)


def register_new(
    plan: Plan, harness: Participant, command: RegisterAgent, actor: Actor, ctx: Ctx
) -> None:
    s = plan.s
    if command.forked_from is not None and command.made_for is not None:
        refuse(
            "invalid_event", "an agent is a fork's copy or made for an ask, not both", "made_for"
        )
    asked = command.forked_from is not None or command.made_for is not None
    if command.space_id is not None and not asked:
        refuse(
            "invalid_event",
            "space_id is the room a fork's copy or a new agent was asked for: name "
            "forked_from or made_for with it",
            "space_id",
        )
    if command.forked_from is not None and command.space_id is None:
        refuse("invalid_event", "a fork's copy names the room it was asked for", "space_id")
    home: str | None = None
    if command.lead:
        if command.state == "archived":
            refuse(
                "lead_room", "the Main agent stays in its Main room: it is not archived", "state"
            )
        if asked:
            refuse("invalid_event", "the Main agent stays in its Main room", "lead")
        first = main_agent(s, harness.id)
        if first is not None:
            refuse("invalid_event", f"{first.name} is this harness's Main agent already", "lead")
        home = s.home_of(harness.id)
        if home is None:
            refuse("invalid_event", "this harness has no home room to be its Main room", "lead")
    if command.forked_from is not None:
        copied = s.participant(command.forked_from)
        if copied is None or copied.kind != "agent" or copied.owner_id != harness.id:
            refuse("not_found", "forked_from names none of your agents", "forked_from")
    ask, why = None, None
    if asked:
        ask, why = ask_answered(s, harness.id, command, ctx)
    name = free_name(command.name, [n for _, n in s.directory()])
    agent_id = new_id("agt")
    facts = AgentFacts(
        key=command.key,
        state=command.state,
        main=command.lead,
        forked_from=command.forked_from,
        made_for=command.made_for,
        face=command.face or None,
    )
    agent = Participant(agent_id, "agent", "member", harness.id, name, ctx.seq, agent=facts)
    room = home or (ask.space_id if ask is not None else None)
    if room is not None and not command.lead:
        refusal = refusal_to_enter(s, agent, room)
        if refusal is not None:
            room, why = None, f"it could not join the room it was asked for: {refusal.message}"
    if why is not None:
        agent = replace(agent, agent=replace(facts, why=why))
    changes: list[Change] = [plan.put_agent(agent)]
    if ask is not None and room is not None:
        changes.append(PutAsk(replace(ask, answered_by=agent_id)))
    fork_of = ask.id if ask is not None and ask.kind == "fork" else None
    registered = AgentRegistered(
        agent_id=agent_id,
        harness_id=harness.id,
        key=command.key,
        name=name,
        state=command.state,
        main=command.lead,
        space_id=room,
        forked_from=command.forked_from,
        fork_of=fork_of if room is not None else None,
        made_for=command.made_for,
        face=command.face or None,
    )
    me = Actor(kind="harness", id=harness.id)
    plan.add(registered, me, changes)
    if room is not None:
        made_for = command.made_for if ask is not None and ask.kind == "new" else None
        enter(plan, agent_id, room, me, fork_of=fork_of, made_for=made_for)
    if home is not None:
        # The Main room takes no other agent: the one Chips gave the harness there
        # (rules/agents/given.py) gives its place, and what it said, to the Main agent.
        for other in plan.agents_here(home, harness.id):
            stand_in = plan.participant(other)
            if other == agent_id or stand_in is None or not is_given(stand_in):
                continue
            replaced = MembershipReplaced(space_id=home, participant_id=agent_id, replaced=other)
            plan.add(replaced, me)
            leave(plan, other, home, "removed", me)


def ask_answered(
    s: DoorState, harness_id: str, command: RegisterAgent, ctx: Ctx
) -> tuple[Ask | None, str | None]:
    """The ask a copy or a new agent answers, if it came in time; else why it is free."""
    if command.made_for is not None:
        ask = s.asks.get(command.made_for)
        if ask is None or ask.kind != "new" or ask.harness_id != harness_id:
            refuse("not_found", "made_for names no ask of your harness for a new agent", "made_for")
        if command.space_id is not None and command.space_id != ask.space_id:
            refuse("invalid_event", "that ask was for another room", "space_id")
        asks = [ask]
    else:
        asks = [
            a
            for a in s.asks.values()
            if a.kind == "fork"
            and a.harness_id == harness_id
            and a.agent_id == command.forked_from
            and a.space_id == command.space_id
        ]
        if not asks:
            return None, "nobody asked for a copy of that agent in that room"
    waiting = [a for a in asks if a.answered_by is None]
    if not waiting:
        return None, "that ask was answered already, by another agent"
    ask = max(waiting, key=lambda a: (a.at, a.id))
    if ctx.now - ask.at > ctx.ask_wait:
        return None, (
            f"it came more than {wait_words(ctx.ask_wait)} after the ask ({iso(ask.at)}): "
            "the room stopped waiting, so it is registered free"
        )
    return ask, None


def wait_words(wait: timedelta) -> str:
    """The wait as the answer says it: "a minute", or its seconds when set otherwise."""
    seconds = wait.total_seconds()
    return "a minute" if seconds == 60 else f"{seconds:g} seconds"


def register_again(plan: Plan, agent: Participant, command: RegisterAgent, actor: Actor) -> None:
    """The same key: renamed unless a person renamed it, archived or brought back."""
    s = plan.s
    facts = facts_of(agent)
    if command.lead and not facts.main:
        refuse(
            "invalid_event", "an agent is made the Main agent when it is first registered", "lead"
        )
    name: str | None = None
    if facts.name_by is None and not same_name(agent.name, command.name):
        name = free_name(command.name, [n for pid, n in s.directory() if pid != agent.id])
        if name == agent.name:
            name = None
    state = command.state if command.state != facts.state else None
    # A face given that differs from the one it has ("" takes it off); none keeps it.
    face = command.face if command.face is not None and command.face != (facts.face or "") else None
    if name is None and state is None and face is None:
        return  # nothing changed: nothing is logged
    if state == "archived" and facts.main:
        refuse("lead_room", "the Main agent stays in its Main room: it is not archived", "state")
    me = Actor(kind="harness", id=agent.owner_id or "")
    if state == "archived":
        archive_agent(plan, agent, me)
    now = plan.participant(agent.id) or agent
    now_facts = replace(facts_of(now), state=state or facts.state)
    if face is not None:
        now_facts = replace(now_facts, face=face or None)
    changed = replace(now, name=name or now.name, agent=now_facts)
    updated = AgentUpdated(agent_id=agent.id, harness_id=me.id, name=name, state=state, face=face)
    plan.add(updated, me, [plan.put_agent(changed)])
    if state == "active":
        unarchive_agent(plan, agent.id, me)


def archive_agent(plan: Plan, agent: Participant, me: Actor) -> None:
    """``state: "archived"``: released from its room (its runs there cancelled first);
    a room it was the only agent in is archived with it."""
    room = plan.room_of_agent(agent.id)
    if room is None:
        return
    alone = plan.agents_here(room, None) == [agent.id]
    leave(plan, agent.id, room, "agent_archived", me)
    space = plan.space(room)
    if alone and space is not None and space.state == "open" and space.home_of is None:
        now = plan.participant(agent.id) or agent
        remembered = replace(now, agent=replace(facts_of(now), archived_room=room))
        closed = plan.put_space(replace(space, state="closed"))
        plan.add(
            SpaceUpdated(space_id=room, state="closed"), me, [closed, plan.put_agent(remembered)]
        )


def unarchive_agent(plan: Plan, agent_id: str, me: Actor) -> None:
    """Registered active again: the room archived with it opens, and it goes back to the
    room it left when it was archived, if it may."""
    agent = plan.participant(agent_id)
    assert agent is not None
    facts = facts_of(agent)
    if facts.left_why != "agent_archived" or facts.left_space_id is None:
        return
    room = facts.left_space_id
    space = plan.space(room)
    if facts.archived_room == room and space is not None and space.state == "closed":
        plan.add(
            SpaceUpdated(space_id=room, state="open"),
            me,
            [plan.put_space(replace(space, state="open"))],
        )
    cleared = replace(agent, agent=replace(facts, archived_room=None))
    plan.steps[-1].decision.changes.append(plan.put_agent(cleared))
    if refusal_to_enter(plan, cleared, room) is None:
        enter(plan, agent_id, room, me)
