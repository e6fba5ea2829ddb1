"""Agents' plans (the events an operation logs, read through as it goes), and what an
agent is: its facts, its Main room, its name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from chips_common.append import Actor
from chips_common.events import (
    EventBody,
    MessagePost,
)
from chips_common.rules.names import name_key
from chips_eventlog.refused import refuse
from chips_eventlog.rules import stopping
from chips_eventlog.rules.common import Step
from chips_eventlog.state import (
    AddMember,
    AgentFacts,
    Change,
    Decision,
    DoorState,
    Participant,
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

    def stand(self, space_id: str, pid: str, standing: str) -> SetStanding:
        """A member's standing changed in place."""
        self._members[(space_id, pid)] = standing
        return SetStanding(space_id, pid, standing)

    def names_made(self) -> list[str]:
        """The names of the agents this plan made or changed."""
        return [p.name for p in self._people.values()]

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
