"""What every rule module shares: the context of a decision, the membership check, and
who speaks: a harness, or one of its agents (docs/adr/0070)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from chips_common.append import Actor, AppendRequest
from chips_common.events import EventBody
from chips_common.rules import may
from chips_eventlog.refused import refuse
from chips_eventlog.state import Decision, DoorState, Space

# How long a fork's copy or a new agent has to be registered after the ask (FORK_WAIT_MS,
# NEW_AGENT_WAIT_MS): after that it is registered free, and the answer says why. The
# eventlog's CHIPS_AGENT_ASK_WAIT_SECONDS sets another (the e2e tests' late copy).
ASK_WAIT = timedelta(seconds=60)

# The actors that are participants (an operator or Chips itself is not).
PARTICIPANTS = ("person", "harness", "agent")


@dataclass(frozen=True)
class Ctx:
    """The circumstances of one decision.

    ``seq`` is the seq the event being decided will be logged at; ``request`` is the
    client's request, or None for an event the door derives (a composer command's, a
    cancel a room operation sends).
    """

    seq: int
    now: datetime
    request: AppendRequest | None = None
    ask_wait: timedelta = ASK_WAIT


@dataclass(frozen=True)
class Step:
    """One event a command or a two-room event logs, with what deciding it changed."""

    body: EventBody
    actor: Actor
    decision: Decision


def room_facts(space: Space) -> may.Room:
    """What the shared rules of ``chips_common.rules.may`` read of a space."""
    return may.Room(space.kind, space.state, space.locked, space.home_of, space.key)


def role_of(s: DoorState, actor: Actor) -> str | None:
    """The actor's role in the workspace, for the rules an owner or admin passes."""
    me = s.participant(actor.id)
    return me.role if me is not None else None


def check_member(s: DoorState, space_id: str, actor: Actor) -> str:
    """The actor's standing in the space; anyone not in it is refused.

    A space that does not exist and one the actor is not in are refused alike, so a
    refusal never tells a stranger which rooms exist.
    """
    standing = s.standing(space_id, actor.id)
    if standing is None:
        refuse("forbidden", "you are not a member of this space", "space_id")
    return standing


# --- harnesses and their agents (docs/adr/0070) ------------------------------------------


def harness_of(actor: Actor) -> str | None:
    """The harness behind an actor: a harness itself, or an agent's harness; None for
    anybody else. Runs, cards and lanes are the harness's, whichever agent did it."""
    if actor.kind == "harness":
        return actor.id
    if actor.kind == "agent":
        return actor.harness_id
    return None


def in_room(s: DoorState, space_id: str, actor: Actor) -> bool:
    """Whether the actor is in a room, or for an agent, it or its harness (what spans rooms,
    as a lane does, is the harness's)."""
    if s.standing(space_id, actor.id) is not None:
        return True
    harness = harness_of(actor)
    return harness is not None and s.standing(space_id, harness) is not None


def kind_of(actor: Actor) -> str:
    """The kind an actor posts as: an agent posts what its harness may."""
    return "harness" if actor.kind == "agent" else actor.kind


def agents_here(s: DoorState, space_id: str, harness_id: str) -> list[str]:
    """The harness's agents in a room (a thread's room, for a thread), in the order they
    came in."""
    here = s.members.get(s.room_of(space_id), {})
    mine = [
        (member.since_seq, pid)
        for pid, member in here.items()
        if (p := s.participant(pid)) is not None and p.kind == "agent" and p.owner_id == harness_id
    ]
    return [pid for _, pid in sorted(mine)]


def speaks_agents(s: DoorState, harness_id: str) -> bool:
    """Whether a harness has declared the capability ``agents``."""
    harness = s.participant(harness_id)
    return harness is not None and "agents" in harness.capabilities


def room_named(s: DoorState, raw: Any) -> str | None:
    """The room an event is said in: its ``space_id``, or its run's."""
    if not isinstance(raw, dict):
        return None
    space_id = raw.get("space_id")
    if isinstance(space_id, str):
        return space_id
    run = s.run(raw["run_id"]) if isinstance(raw.get("run_id"), str) else None
    return run.space_id if run is not None else None


# What a harness does to a room as itself, whoever of its agents is there: it retitles and
# archives a room it opened, and comes and goes (its row of standing ``agents`` is the
# door's to write, docs/adr/0070).
THE_HARNESS_S = frozenset(
    {"space.created", "space.updated", "space.lock_set", "membership.added", "membership.removed"}
)


def check_speaker(s: DoorState, raw: Any, actor: Actor) -> Actor:
    """Who an event is decided and logged as (docs/product/websocket.md, Speaking as one).

    An agent named as the actor must be the sending harness's own, and active. A harness
    sending as itself about a run one of its agents started is read as that agent; and in
    a room where any of its agents is, as its one agent there, or refused ``which_agent``
    when it has several there. That holds where the harness is a member itself too: the
    room shows it as its agents (``rules.handles.as_shown``), so its words are theirs
    (docs/adr/0096). Only a harness before agents, a member itself beside several of its
    agents, cannot name one, and speaks as itself there. A harness in a room with none of
    its agents speaks as itself, as before; and so does a harness doing to a room what is
    its own to do (:data:`THE_HARNESS_S`).
    """
    if actor.kind == "agent":
        agent = s.participant(actor.id)
        if agent is None or agent.kind != "agent":
            refuse("not_found", f"no agent {actor.id} in this workspace", "actor.id")
        if agent.owner_id != actor.harness_id:
            refuse("forbidden", f"{agent.name} is another harness's agent", "actor.id")
        if agent.agent is not None and agent.agent.state != "active":
            refuse(
                "forbidden",
                f"{agent.name} is archived: register it active again before it speaks",
                "actor.id",
            )
        return actor
    if actor.kind != "harness" or not isinstance(raw, dict) or raw.get("type") in THE_HARNESS_S:
        return actor
    run_id = raw.get("run_id")
    run = s.run(run_id) if isinstance(run_id, str) else None
    if run is not None and run.agent_id is not None and run.harness_id == actor.id:
        return Actor(kind="agent", id=run.agent_id, harness_id=actor.id)
    room = room_named(s, raw)
    standing = s.standing(room, actor.id) if room is not None else None
    if room is None or standing is None:
        return actor
    mine = agents_here(s, room, actor.id)
    if len(mine) == 1:
        return Actor(kind="agent", id=mine[0], harness_id=actor.id)
    if len(mine) > 1 and (standing == "agents" or speaks_agents(s, actor.id)):
        refuse(
            "which_agent",
            f"{len(mine)} of your agents are in this room: name the one that speaks as the "
            'event\'s actor, {"kind": "agent", "id": "agt_…"}',
            "actor",
        )
    return actor
