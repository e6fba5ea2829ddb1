"""What a free agent says: held for the next room it joins, or, from an agent that has
never been in a room, said in a room it opens with its harness's owner.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from chips_common.append import Actor
from chips_common.clock import iso
from chips_common.events import (
    InvalidEvent,
    MessageHeld,
    MessagePost,
    SpaceCreated,
    parse_event,
)
from chips_common.ids import new_id
from chips_eventlog.refused import Refused, refuse
from chips_eventlog.rules.agents.plan import HeldPost, Plan, facts_of
from chips_eventlog.rules.agents.rooms import enter
from chips_eventlog.rules.common import Ctx
from chips_eventlog.state import (
    DoorState,
    HeldWords,
    Participant,
    PutHeld,
    Space,
)

# --- what a free agent says ----------------------------------------------------------------


def route_post(s: DoorState, raw: Any, actor: Actor, ctx: Ctx) -> Any:
    """An agent's ``message.post``, before it is decided as a post (docs/product/websocket.md).

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
