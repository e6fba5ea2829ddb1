"""A person's asks of a harness for an agent: a fork's copy (``agent.fork``) or a new
agent (``agent.asked``).
"""

from __future__ import annotations

from chips_common.append import Actor
from chips_common.events import (
    AgentAsked,
    AgentFork,
)
from chips_common.ids import new_id
from chips_common.rules.names import free_name
from chips_eventlog.refused import refuse
from chips_eventlog.rules.common import Ctx, check_member
from chips_eventlog.state import (
    Ask,
    Decision,
    DoorState,
    Participant,
    PutAsk,
)

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
    return Decision({"name": name, "by": actor.id}, [PutAsk(ask)], event_id)
