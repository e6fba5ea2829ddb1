"""Agents (docs/adr/0070, 0071): registering them, where they may be, and what a free one
says (spec/websocket.md: Agents, One room at a time, Forks, New agents).

**One rule decides where an agent may be**: :func:`refusal_to_enter`. Every way an agent
enters a room goes through it as the event is written — a person's add
(``rules/spaces.py``), a move, attach, an unarchive bringing back the agents its archive
released, a fork's copy or a new agent joining the room it was asked for, and a free
agent opening a room with its harness's owner — so two at once leave it in one room and
the other is told ``agent_elsewhere``.

**Entering** (:func:`enter`): the harness stands behind the agent, so when it is not in
the room it is added first with standing ``agents``; then the agent's ``membership.added``
and ``agent.attached``; then what it said while free, posted by it, oldest first, with
``held_since``. **Leaving** (:func:`leave`): each run of the agent in the room is sent
``run.cancel`` while it is still there; then ``agent.released``, its ``membership.removed``,
and the harness's row when it stood there only behind its agents and none is left.

Each operation is a :class:`Plan`: the events to log, in order, each decided against the
door state as it will stand when that event is staged (the plan reads through its own
changes), with the seq it will be logged at accounted for in its changes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, cast

from pydantic import ValidationError

from chips_common.append import Actor
from chips_common.clock import iso
from chips_common.commands import AttachAgent, MoveAgent, RegisterAgent, RenameAgent
from chips_common.events import (
    AgentAsked,
    AgentAttached,
    AgentFork,
    AgentRegistered,
    AgentReleased,
    AgentUpdated,
    EventBody,
    InvalidEvent,
    MembershipAdded,
    MembershipRemoved,
    MembershipReplaced,
    MessageHeld,
    MessagePost,
    SpaceCreated,
    SpaceUpdated,
    parse_event,
)
from chips_common.events.agents import ReleaseReason
from chips_common.ids import new_id
from chips_common.rules.names import free_name, name_key
from chips_eventlog.refused import Refused, refuse
from chips_eventlog.rules import stopping
from chips_eventlog.rules.common import Ctx, Step, check_member
from chips_eventlog.state import (
    AddMember,
    AgentFacts,
    Ask,
    Change,
    Decision,
    DoorState,
    HeldWords,
    Participant,
    PutAsk,
    PutHeld,
    PutParticipant,
    PutSpace,
    RemoveMember,
    Run,
    SetStanding,
    Space,
)

# A harness in a room only behind its agents there; only the door writes it.
BEHIND = "agents"
# What a run.cancel says when its agent leaves the room, by the release's reason.
STOP_WHY = {
    "removed": "its agent was taken out of the room",
    "moved": "its agent moved to another room",
    "agent_archived": "its agent was archived",
    "archived": stopping.ARCHIVED,
    "deleted": stopping.DELETED,
}


# --- a plan: the events an operation logs, read through as it goes ------------------------


@dataclass(frozen=True)
class HeldPost:
    """A post the door decides after the plan's steps: what a free agent said, posted by it
    in the room it joined (or the words that opened a room for it)."""

    body: MessagePost
    actor: Actor


class Plan:
    """The events one operation logs, in order, and the door state as they leave it.

    Reads (:meth:`participant`, :meth:`space`, :meth:`standing`, :meth:`room_of_agent`)
    see the plan's own changes over the door state, so each step is decided as of the
    moment it will be staged; ``seq`` is the seq the next step will be logged at.
    """

    def __init__(self, s: DoorState, seq: int) -> None:
        self.s = s
        self.first = seq
        self.steps: list[Step] = []
        self.posts: list[HeldPost] = []
        self._people: dict[str, Participant] = {}
        self._spaces: dict[str, Space] = {}
        self._members: dict[tuple[str, str], str | None] = {}
        self._cancelled: set[str] = set()

    @property
    def seq(self) -> int:
        return self.first + len(self.steps)

    def add(
        self,
        body: EventBody,
        actor: Actor,
        changes: list[Change] | None = None,
        event_id: str | None = None,
    ) -> None:
        self.steps.append(Step(body, actor, Decision({}, list(changes or []), event_id)))

    # reading through

    def participant(self, pid: str) -> Participant | None:
        return self._people.get(pid) or self.s.participant(pid)

    def space(self, space_id: str) -> Space | None:
        return self._spaces.get(space_id) or self.s.space(space_id)

    def standing(self, space_id: str, pid: str) -> str | None:
        if (space_id, pid) in self._members:
            return self._members[(space_id, pid)]
        return self.s.standing(space_id, pid)

    def members(self, space_id: str) -> list[str]:
        """Who is in the room, as the plan leaves it."""
        here = dict.fromkeys(self.s.members.get(space_id, {}))
        for (room, pid), standing in self._members.items():
            if room != space_id:
                continue
            if standing is None:
                here.pop(pid, None)
            else:
                here[pid] = None
        return list(here)

    def room_of_agent(self, agent_id: str) -> str | None:
        found = [room for (room, pid), st in self._members.items() if pid == agent_id]
        for room in found:
            if self._members[(room, agent_id)] is not None:
                return room
        where = self.s.room_of_agent(agent_id)
        if where is not None and (where, agent_id) in self._members:
            return None  # it left that room in this plan
        return where

    def agents_here(self, space_id: str, harness_id: str | None) -> list[str]:
        """The harness's agents in the room (or every agent, harness None)."""
        found = []
        for pid in self.members(space_id):
            p = self.participant(pid)
            mine = p is not None and (harness_id is None or p.owner_id == harness_id)
            if mine and p is not None and p.kind == "agent":
                found.append(pid)
        return found

    # changing

    def put_agent(self, agent: Participant) -> PutParticipant:
        self._people[agent.id] = agent
        return PutParticipant(agent)

    def put_space(self, space: Space) -> PutSpace:
        self._spaces[space.id] = space
        return PutSpace(space)

    def joined(self, space_id: str, pid: str, standing: str) -> AddMember:
        """A membership beginning at the next step's seq."""
        self._members[(space_id, pid)] = standing
        return AddMember(space_id, pid, standing, self.seq)

    def left(self, space_id: str, pid: str) -> RemoveMember:
        self._members[(space_id, pid)] = None
        return RemoveMember(space_id, pid, self.seq)

    def cancel(self, running: list[Run], why: str, actor: Actor) -> None:
        """Stop these runs (rules/stopping.py), each once however often it is reached."""
        fresh = [r for r in running if r.id not in self._cancelled]
        self._cancelled.update(r.id for r in fresh)
        self.steps.extend(stopping.stop_steps(self.s, fresh, why, actor))


# --- what an agent is ----------------------------------------------------------------------


def facts_of(agent: Participant) -> AgentFacts:
    return agent.agent if agent.agent is not None else AgentFacts(key=agent.id)


def agent_named(s: DoorState | Plan, agent_id: str, field: str = "agent_id") -> Participant:
    agent = s.participant(agent_id)
    if agent is None or agent.kind != "agent" or agent.owner_id is None:
        refuse("not_found", "no such agent in this workspace", field)
    return agent


def main_agent(s: DoorState, harness_id: str) -> Participant | None:
    """The harness's Main agent (its lead), which stays in its Main room, if it has one."""
    return next((a for a in s.agents_of(harness_id) if facts_of(a).main), None)


def main_room_of(s: DoorState | Plan, space_id: str) -> str | None:
    """The harness whose Main room this is: its home, once it has a Main agent (ADR 0071)."""
    space = s.space(space_id)
    state = s.s if isinstance(s, Plan) else s
    if space is None or space.home_of is None:
        return None
    return space.home_of if main_agent(state, space.home_of) is not None else None


def run_agent(run: Run) -> str | None:
    """The agent whose turn a run is, where the door state records it."""
    return cast(str | None, getattr(run, "agent_id", None))


def same_name(current: str, asked: str) -> bool:
    """Whether ``current`` is ``asked``, or ``asked`` numbered ("OpenClaw 2" for
    "OpenClaw"): asking again under the name it was numbered from keeps the number."""
    if name_key(current) == name_key(asked):
        return True
    head, _, number = current.rpartition(" ")
    return number.isdigit() and name_key(head) == name_key(asked)


# --- the one rule for entering a room --------------------------------------------------------


def refusal_to_enter(
    s: DoorState | Plan, agent: Participant, space_id: str, *, moving: bool = False
) -> Refused | None:
    """Why ``agent`` may not enter ``space_id`` now, or None when it may.

    ``moving``: the agent is taken out of the room it is in first (attach, a move), so
    being elsewhere does not stop it. spec/websocket.md: a person adding an agent that is
    in another room is refused ``agent_elsewhere`` with that room; an archived room takes
    no agent (``room_closed``); the Main agent stays in its Main room, which takes people
    and no other agent (``lead_room``).
    """
    facts = facts_of(agent)
    if facts.state != "active":
        return Refused(
            "invalid_event",
            f"{agent.name} is archived: its harness registers it active to bring it back",
            "agent_id",
        )
    space = s.space(space_id)
    if space is None or space.state == "erased":
        return Refused("not_found", "no such room in this workspace", "space_id")
    if space.parent_space_id is not None:
        return Refused("invalid_event", "an agent joins a room, not one of its threads", "space_id")
    if space.state != "open":
        return Refused(
            "room_closed",
            "this room is archived: unarchive it before an agent joins it",
            "space_id",
        )
    if facts.main:
        state = s.s if isinstance(s, Plan) else s
        if state.home_of(agent.owner_id or "") != space_id:
            return Refused(
                "lead_room",
                f"{agent.name} is its harness's Main agent: it stays in its Main room",
                "space_id",
            )
    elif main_room_of(s, space_id) is not None:
        return Refused(
            "lead_room", "this is a Main room: it takes people and no other agent", "space_id"
        )
    where = s.room_of_agent(agent.id)
    if where == space_id:
        return Refused("invalid_event", f"{agent.name} is in this room already", "agent_id")
    if where is not None and not moving:
        return Refused(
            "agent_elsewhere",
            f"{agent.name} is in another room: move it from there instead",
            "space_id",
            {"space_id": where},
        )
    return None


def check_enter(
    s: DoorState | Plan, agent: Participant, space_id: str, *, moving: bool = False
) -> None:
    refusal = refusal_to_enter(s, agent, space_id, moving=moving)
    if refusal is not None:
        raise refusal


def enter(
    plan: Plan,
    agent_id: str,
    space_id: str,
    actor: Actor,
    *,
    added: MembershipAdded | None = None,
    member_already: bool = False,
    replacing: str | None = None,
    fork_of: str | None = None,
    made_for: str | None = None,
) -> None:
    """The steps of an agent entering a room it may enter (:func:`check_enter` first).

    ``added`` is a person's own ``membership.added`` of it, logged as the agent's; a
    room the agent opened has it in already (``member_already``).
    """
    agent = plan.participant(agent_id)
    assert agent is not None and agent.owner_id is not None
    harness_id = agent.owner_id
    if plan.standing(space_id, harness_id) is None:
        behind = MembershipAdded(space_id=space_id, participant_id=harness_id, standing=BEHIND)
        plan.add(behind, actor, [plan.joined(space_id, harness_id, BEHIND)])
    if not member_already:
        body = added or MembershipAdded(space_id=space_id, participant_id=agent_id)
        plan.add(body, actor, [plan.joined(space_id, agent_id, "member")])
    facts = facts_of(agent)
    changes: list[Change] = []
    if facts.why is not None:
        changes.append(plan.put_agent(replace(agent, agent=replace(facts, why=None))))
    held = plan.s.held.get(agent_id, ())
    if held:
        changes.append(PutHeld(agent_id, ()))
    attached = AgentAttached(
        space_id=space_id,
        agent_id=agent_id,
        harness_id=harness_id,
        replacing=replacing,
        fork_of=fork_of,
        made_for=made_for,
    )
    plan.add(attached, actor, changes)
    speaker = Actor(kind="agent", id=agent_id, harness_id=harness_id)
    for words in held:  # oldest first
        post = MessagePost(
            space_id=space_id,
            text=words.text or None,
            upload_ids=list(words.upload_ids) or None,
            held_since=datetime.fromisoformat(words.at),
        )
        plan.posts.append(HeldPost(post, speaker))


def leave(
    plan: Plan,
    agent_id: str,
    space_id: str,
    reason: ReleaseReason,
    actor: Actor,
    *,
    removed: MembershipRemoved | None = None,
    moved_to: str | None = None,
    cancel: bool = True,
    members: bool = True,
    delete: bool = False,
) -> None:
    """The steps of an agent leaving the room it is in, free: its runs there cancelled
    first, then ``agent.released``, then its membership and, when it stood there only
    behind its agents and none is left, its harness's.

    ``cancel=False`` when the runs were stopped already (an archive stops every run in
    the room); ``members=False`` for a room being deleted, whose erasure ends them all;
    ``delete`` when the agent goes in its harness too (:func:`release_for_deletion`).
    """
    agent = plan.participant(agent_id)
    assert agent is not None and agent.owner_id is not None
    harness_id = agent.owner_id
    others = [a for a in plan.agents_here(space_id, harness_id) if a != agent_id]
    harness_goes = members and plan.standing(space_id, harness_id) == BEHIND and not others
    if cancel:
        running = stopping.runs_to_stop(plan.s, space_id, harness_id)
        # The agent's own runs; and what its harness started as itself there, when the
        # harness leaves the room with it.
        mine = [
            r for r in running if run_agent(r) == agent_id or (harness_goes and not run_agent(r))
        ]
        plan.cancel(mine, STOP_WHY[reason], actor)
    facts = replace(facts_of(agent), left_space_id=space_id, left_why=reason)
    released = AgentReleased(
        space_id=space_id,
        agent_id=agent_id,
        harness_id=harness_id,
        reason=reason,
        moved_to=moved_to,
        delete=True if delete else None,
    )
    plan.add(released, actor, [plan.put_agent(replace(agent, agent=facts))])
    if not members:
        return
    body = removed or MembershipRemoved(space_id=space_id, participant_id=agent_id)
    plan.add(body, actor, [plan.left(space_id, agent_id)])
    if harness_goes:
        gone = MembershipRemoved(space_id=space_id, participant_id=harness_id, standing=BEHIND)
        plan.add(gone, actor, [plan.left(space_id, harness_id)])


# --- rooms: archived, unarchived, deleted --------------------------------------------------


def archive_room(plan: Plan, space_id: str, actor: Actor) -> None:
    """A room archived: every run in it stopped, then each agent in it released."""
    plan.cancel(stopping.runs_to_stop(plan.s, space_id, None), stopping.ARCHIVED, actor)
    for agent_id in plan.agents_here(space_id, None):
        leave(plan, agent_id, space_id, "archived", actor, cancel=False)


def bring_back(plan: Plan, space_id: str, actor: Actor) -> None:
    """A room unarchived: the agents its archive released, still free, come back."""
    released = [
        p
        for p in plan.s.participants.values()
        if p.kind == "agent"
        and facts_of(p).left_space_id == space_id
        and facts_of(p).left_why == "archived"
    ]
    for agent in sorted(released, key=lambda p: (p.joined_seq, p.id)):
        agent = plan.participant(agent.id) or agent
        if refusal_to_enter(plan, agent, space_id) is None:
            enter(plan, agent.id, space_id, actor)


def release_for_deletion(plan: Plan, space_id: str, actor: Actor) -> None:
    """A room deleted (its runs stopped already): each agent in it released; the erasure
    that follows ends every membership.

    An agent whose harness deletes its own side of a room it follows (it declared
    ``follows_rooms`` and the person deleting owns it: ``space.erased``'s ``delete``) goes
    in the harness too: its release says ``delete: true`` and Chips archives it
    (spec/websocket.md, One room at a time: deleted).
    """
    for agent_id in plan.agents_here(space_id, None):
        agent = plan.participant(agent_id)
        assert agent is not None and agent.owner_id is not None
        harness = plan.participant(agent.owner_id)
        delete = (
            harness is not None
            and "follows_rooms" in harness.capabilities
            and harness.owner_id == actor.id
            and not facts_of(agent).main
        )
        leave(
            plan, agent_id, space_id, "deleted", actor, cancel=False, members=False, delete=delete
        )
        if delete:
            now = plan.participant(agent_id) or agent
            archived = replace(now, agent=replace(facts_of(now), state="archived"))
            updated = AgentUpdated(agent_id=agent_id, harness_id=agent.owner_id, state="archived")
            plan.add(updated, actor, [plan.put_agent(archived)])


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
    plan = Plan(s, ctx.seq)
    agent = s.agent_by_key(harness.id, command.key)
    if agent is None:
        register_new(plan, harness, command, actor, ctx)
    else:
        register_again(plan, agent, command, actor)
    return plan


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
    )
    me = Actor(kind="harness", id=harness.id)
    plan.add(registered, me, changes)
    if room is not None:
        made_for = command.made_for if ask is not None and ask.kind == "new" else None
        enter(plan, agent_id, room, me, fork_of=fork_of, made_for=made_for)


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
    if name is None and state is None:
        return  # nothing changed: nothing is logged
    if state == "archived" and facts.main:
        refuse("lead_room", "the Main agent stays in its Main room: it is not archived", "state")
    me = Actor(kind="harness", id=agent.owner_id or "")
    if state == "archived":
        archive_agent(plan, agent, me)
    now = plan.participant(agent.id) or agent
    now_facts = replace(facts_of(now), state=state or facts.state)
    changed = replace(now, name=name or now.name, agent=now_facts)
    updated = AgentUpdated(agent_id=agent.id, harness_id=me.id, name=name, state=state)
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
    if command.replacing is not None:
        if command.replacing == actor.id:
            if plan.standing(space_id, actor.id) == BEHIND:
                refuse(
                    "invalid_event",
                    "your harness is in that room only behind its agents: name one of them",
                    "replacing",
                )
        else:
            replaced = plan.participant(command.replacing)
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
    enter(plan, agent.id, space_id, actor, replacing=command.replacing)
    if command.replacing is not None:
        changes: list[Change] = []
        if replaced is None:  # the harness itself: it stands behind its agents there now
            changes.append(SetStanding(space_id, actor.id, BEHIND))
        body = MembershipReplaced(
            space_id=space_id, participant_id=agent.id, replaced=command.replacing
        )
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


# --- what a free agent says ----------------------------------------------------------------


def route_post(s: DoorState, raw: Any, actor: Actor, ctx: Ctx) -> Any:
    """An agent's ``message.post``, before it is decided as a post (spec/websocket.md).

    Naming no room, it is said in the agent's room; from a free agent, naming no room or
    the room it left, it is held (``message.held``: a :class:`Plan`); and an agent that
    has never been in a room opens one with its harness's owner and says it there.
    Anything else is returned as it came, to be decided as any post.
    """
    if actor.kind != "agent" or not isinstance(raw, dict) or raw.get("type") != "message.post":
        return raw
    agent = s.participant(actor.id)
    if agent is None or agent.kind != "agent" or agent.owner_id != actor.harness_id:
        return raw  # who speaks is checked as any event's actor
    room = s.room_of_agent(agent.id)
    named = raw.get("space_id")
    facts = facts_of(agent)
    if named is None and room is not None:
        return {**raw, "space_id": room}
    if named is not None and (named == room or named != facts.left_space_id):
        return raw
    if named is not None and s.standing(named, agent.id) is not None:
        return raw
    try:
        post = parse_event({**raw, "space_id": named or "spc_nowhere"})
    except InvalidEvent as exc:
        raise Refused("invalid_event", exc.message, exc.field) from None
    assert isinstance(post, MessagePost)
    if facts.left_space_id is None:
        return open_room(s, agent, post, actor, ctx)
    return hold(s, agent, post, actor, ctx)


def hold(s: DoorState, agent: Participant, post: MessagePost, actor: Actor, ctx: Ctx) -> Plan:
    """A free agent's words, held for the next room it joins."""
    if post.kind != "text" or post.reply_to is not None or post.run_id is not None:
        refuse(
            "invalid_event",
            f"{agent.name} is in no room: its words are held for the next room it joins, "
            "and only words and files are",
            "space_id",
        )
    upload_ids = tuple(post.upload_ids or ())
    try:
        held = MessageHeld(
            agent_id=agent.id,
            harness_id=agent.owner_id or "",
            text=post.text or "",
            upload_ids=list(upload_ids),
            left_space_id=facts_of(agent).left_space_id,
        )
    except ValidationError as exc:
        refuse("invalid_event", str(exc.errors()[0]["msg"]), "text")
    plan = Plan(s, ctx.seq)
    words = HeldWords(plan.seq, iso(ctx.now), post.text or "", upload_ids)
    plan.add(held, actor, [PutHeld(agent.id, (*s.held.get(agent.id, ()), words))])
    return plan


def open_room(s: DoorState, agent: Participant, post: MessagePost, actor: Actor, ctx: Ctx) -> Plan:
    """An agent that has never been in a room, speaking: a room with its harness's owner,
    opened by it, and its words said there."""
    if post.space_id != "spc_nowhere":
        refuse("forbidden", "you are not a member of this space", "space_id")
    harness = s.participant(agent.owner_id or "")
    owner = harness.owner_id if harness is not None else None
    if owner is None:
        refuse("not_found", "the agent's harness has no owner to open a room with", "space_id")
    plan = Plan(s, ctx.seq)
    space_id = new_id("spc")
    space = Space(space_id, "direct", agent.name, created_by=agent.id, created_seq=plan.seq)
    opened = SpaceCreated(
        space_id=space_id, kind="direct", title=agent.name, members=[], opened_for=owner
    )
    plan.add(
        opened,
        actor,
        [
            plan.put_space(space),
            plan.joined(space_id, owner, "owner"),
            plan.joined(space_id, agent.id, "member"),
        ],
    )
    enter(plan, agent.id, space_id, actor, member_already=True)
    plan.posts.append(HeldPost(post.model_copy(update={"space_id": space_id}), actor))
    return plan


# --- a person's asks of a harness for an agent ---------------------------------------------


def _check_asker(s: DoorState, harness: Participant, space_id: str, actor: Actor) -> None:
    if actor.kind != "person":
        refuse("forbidden", "a person asks a harness for an agent")
    check_member(s, space_id, actor)
    me = s.participant(actor.id)
    if actor.id != harness.owner_id and (me is None or me.role not in ("owner", "admin")):
        refuse(
            "forbidden",
            "only the harness's owner, or an owner or admin of the workspace, asks it for an agent",
        )
    space = s.space(space_id)
    if space is not None and space.state != "open":
        refuse("room_closed", "this room is archived: unarchive it first", "space_id")


def check_fork(s: DoorState, body: AgentFork, actor: Actor, ctx: Ctx) -> Decision:
    agent = s.participant(body.agent_id)
    if agent is None or agent.kind != "agent" or agent.owner_id is None:
        refuse("not_found", "no such agent in this workspace", "agent_id")
    harness = s.participant(agent.owner_id)
    if harness is None:
        refuse("not_found", "no such agent in this workspace", "agent_id")
    if body.harness_id is not None and body.harness_id != harness.id:
        refuse("invalid_event", "harness_id is the agent's own harness", "harness_id")
    if "forks" not in harness.capabilities:
        refuse("invalid_event", f"{harness.name} does not make copies of its agents", "agent_id")
    _check_asker(s, harness, body.space_id, actor)
    # The copy that answers it names this ask's id (fork_of): remembered by it.
    event_id = new_id("evt")
    ask = Ask(event_id, "fork", harness.id, body.space_id, ctx.now, agent_id=agent.id)
    return Decision({"harness_id": harness.id}, [PutAsk(ask)], event_id)


def check_asked(s: DoorState, body: AgentAsked, actor: Actor, ctx: Ctx) -> Decision:
    harness = s.participant(body.harness_id)
    if harness is None or harness.kind != "harness":
        refuse("not_found", "no such harness in this workspace", "harness_id")
    if "new_agents" not in harness.capabilities:
        refuse("invalid_event", f"{harness.name} does not make new agents", "harness_id")
    _check_asker(s, harness, body.space_id, actor)
    # The person's word, or else the harness's name numbered to a free one.
    name = free_name(body.name or harness.name, [n for _, n in s.directory()])
    event_id = new_id("evt")
    ask = Ask(event_id, "new", harness.id, body.space_id, ctx.now)
    return Decision({"name": name}, [PutAsk(ask)], event_id)
