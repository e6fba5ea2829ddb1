"""Agents (docs/adr/0070): the asks a person makes of a harness for an agent,
``agent.fork`` and ``agent.asked`` (spec: Forks, New agents).

Only a harness that declared ``forks`` is asked for a copy, and only one that declared
``new_agents`` for a new agent; only the harness's owner or a workspace owner or admin
asks, in a room they are in.
"""

from __future__ import annotations

from chips_common.append import Actor
from chips_common.events import AgentAsked, AgentFork
from chips_common.rules.names import free_name
from chips_eventlog.refused import refuse
from chips_eventlog.rules.common import Ctx, check_member
from chips_eventlog.state import Decision, DoorState, Participant


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
    return Decision({"harness_id": harness.id})


def check_asked(s: DoorState, body: AgentAsked, actor: Actor, ctx: Ctx) -> Decision:
    harness = s.participant(body.harness_id)
    if harness is None or harness.kind != "harness":
        refuse("not_found", "no such harness in this workspace", "harness_id")
    if "new_agents" not in harness.capabilities:
        refuse("invalid_event", f"{harness.name} does not make new agents", "harness_id")
    _check_asker(s, harness, body.space_id, actor)
    # The person's word, or else the harness's name numbered to a free one.
    name = free_name(body.name or harness.name, [n for _, n in s.directory()])
    return Decision({"name": name})
