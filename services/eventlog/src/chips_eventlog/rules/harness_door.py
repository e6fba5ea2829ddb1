"""The harness door (docs/adr/0007): ``POST /v1/harnesses/:id/spaces`` opens, finds,
joins, retitles or claims a space by key (docs/product/spaces.md, How one is opened).

A command, not an event: it decides *which* events to log, which may be none (the same
key with the same title finds the same space). :func:`run_open_space` returns them as
:class:`~chips_eventlog.rules.common.Step` values, each with the seq it will be logged at
accounted for in its changes.
"""

from __future__ import annotations

from dataclasses import replace

from chips_common.append import Actor
from chips_common.commands import OpenSpace
from chips_common.events import (
    MembershipAdded,
    SpaceClaimed,
    SpaceCreated,
    SpaceLeadSet,
    SpaceUpdated,
)
from chips_common.ids import new_id
from chips_eventlog.refused import refuse
from chips_eventlog.rules.agents import given
from chips_eventlog.rules.common import Ctx, Step
from chips_eventlog.state import (
    AddMember,
    AddOpener,
    Change,
    Decision,
    DoorState,
    Participant,
    PutSpace,
    Space,
)


def run_open_space(s: DoorState, command: OpenSpace, actor: Actor, ctx: Ctx) -> list[Step]:
    """Open, find, join, retitle or claim the space the command's key names."""
    harness = s.participant(actor.id)
    if actor.kind != "harness" or harness is None or harness.owner_id is None:
        refuse("forbidden", "only a harness opens spaces through its door")
    me = Actor(kind="harness", id=harness.id)
    steps: list[Step] = []
    space: Space | None
    if command.space_id is not None:
        space = claim(s, command, harness, ctx, steps)
        if space is None:
            return steps
    else:
        space = s.space_by_key(command.key)
    if space is None:
        return open_by_key(command, harness, ctx)
    if not s.opened(space.id, harness.id):
        steps += join_by_key(s, command, space, harness, ctx)
    elif s.standing(space.id, harness.id) is None:
        refuse(
            "forbidden",
            "you are no longer in the space that key names; somebody in it may add you back",
            "key",
        )
    if command.title is not None and command.title != space.title and not space.title_held:
        # A person's rename holds over the door's title (docs/product/spaces.md).
        retitled = replace(space, title=command.title)
        update = SpaceUpdated(space_id=space.id, title=command.title)
        steps.append(Step(update, me, Decision(changes=[PutSpace(retitled)])))
    return steps


def claim(
    s: DoorState, command: OpenSpace, harness: Participant, ctx: Ctx, steps: list[Step]
) -> Space | None:
    """A room a person asked of this harness takes the harness's key (``space.claimed``).

    Returns the space when it was claimed under this key already (a repeat finds it,
    and may retitle it), None once the claim is in ``steps``.
    """
    space = s.space(command.space_id or "")
    if space is None or space.asked_of != harness.id:
        refuse("forbidden", "that room was not asked of you", "space_id")
    if space.key is not None:
        if space.key == command.key:
            return space
        refuse("invalid_event", "that room was claimed already, under another key", "key")
    if s.space_by_key(command.key) is not None:
        refuse("invalid_event", "that key names another space already", "key")
    if s.standing(space.id, harness.id) is None:
        refuse(
            "forbidden",
            "you are no longer in that room; somebody in it may add you back",
            "space_id",
        )
    me = Actor(kind="harness", id=harness.id)
    claimed = replace(space, key=command.key, key_shared=command.shared)
    changes: list[Change] = [PutSpace(claimed), AddOpener(space.id, harness.id, ctx.seq)]
    body = SpaceClaimed(space_id=space.id, key=command.key, shared=command.shared)
    steps.append(Step(body, me, Decision(changes=changes)))
    # The room is led, from the claim, by who claimed it: the harness's agent there, or
    # the harness itself where it is its own one agent (docs/product/websocket.md; docs/adr/0090).
    mine = [m.id for m in s.room_members(space.id) if harness.id in (m.id, m.harness_id)]
    if mine and not given.gives_agent(s, harness.id, space.id, claiming=True):
        # (a harness given its agent by the claim is led by that agent: rules/agents/given.py)
        steps.append(Step(SpaceLeadSet(space_id=space.id, agent_id=mine[0]), me, Decision()))
    if command.title is not None and command.title != space.title and not space.title_held:
        retitled = replace(claimed, title=command.title)
        update = SpaceUpdated(space_id=space.id, title=command.title)
        steps.append(Step(update, me, Decision(changes=[PutSpace(retitled)])))
    return None


def open_by_key(command: OpenSpace, harness: Participant, ctx: Ctx) -> list[Step]:
    """A direct space with the harness and its owner in it, opened for the owner."""
    owner_id = harness.owner_id or ""
    space_id = new_id("spc")
    seq = ctx.seq
    space = Space(
        space_id,
        "direct",
        command.title,
        created_by=harness.id,
        created_seq=seq,
        key=command.key,
        key_shared=command.shared,
    )
    changes: list[Change] = [
        PutSpace(space),
        AddMember(space_id, owner_id, "owner", seq),
        AddMember(space_id, harness.id, "member", seq),
        AddOpener(space_id, harness.id, seq),
    ]
    body = SpaceCreated(
        space_id=space_id,
        kind="direct",
        title=command.title,
        key=command.key,
        shared=command.shared,
        opened_for=owner_id,
    )
    return [Step(body, Actor(kind="harness", id=harness.id), Decision(changes=changes))]


def join_by_key(
    s: DoorState, command: OpenSpace, space: Space, harness: Participant, ctx: Ctx
) -> list[Step]:
    """A second harness on a shared key joins the space, with its owner beside it."""
    if not (space.key_shared and command.shared):
        refuse(
            "forbidden",
            "that key names another harness's space; a key is a harness's own unless "
            "both say it is shared",
            "key",
        )
    me = Actor(kind="harness", id=harness.id)
    steps: list[Step] = []
    for who in dict.fromkeys((harness.id, harness.owner_id or "")):
        if s.standing(space.id, who) is None:
            seq = ctx.seq + len(steps)
            added = Decision(changes=[AddMember(space.id, who, "member", seq)])
            steps.append(Step(MembershipAdded(space_id=space.id, participant_id=who), me, added))
    opener = AddOpener(space.id, harness.id, ctx.seq + len(steps))
    claimed = SpaceClaimed(space_id=space.id, key=command.key, shared=True)
    steps.append(Step(claimed, me, Decision(changes=[opener])))
    return steps
