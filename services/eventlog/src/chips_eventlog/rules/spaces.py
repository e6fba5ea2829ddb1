"""Spaces and who is in them: ``space.created`` (not a thread), ``membership.added`` and
``.removed``, ``space.updated`` and ``space.lock_set`` (docs/product/spaces.md).

An agent added, taken out, or in a room archived or unarchived moves by the one rule of
``rules/agents/`` (:func:`agents_moved`): what the person did is logged among the steps
that rule decides (docs/adr/0071).
"""

from __future__ import annotations

from dataclasses import replace

from chips_common.append import Actor
from chips_common.events import (
    MembershipAdded,
    MembershipRemoved,
    SpaceCreated,
    SpaceLockSet,
    SpaceUpdated,
)
from chips_common.ids import new_id
from chips_common.rules import may
from chips_eventlog.refused import refuse, refuse_if
from chips_eventlog.rules import agents, stopping
from chips_eventlog.rules.agents import given
from chips_eventlog.rules.common import (
    Ctx,
    check_member,
    harness_of,
    kind_of,
    role_of,
    room_facts,
)
from chips_eventlog.state import (
    AddMember,
    Change,
    Decision,
    DoorState,
    PutSpace,
    RemoveMember,
    Space,
)


def check_space_created(s: DoorState, body: SpaceCreated, actor: Actor, ctx: Ctx) -> Decision:
    if actor.kind != "person":
        refuse("forbidden", "a harness opens spaces through its door, not with space.created")
    if body.key is not None or body.shared is not None:
        refuse("invalid_event", "a key is given to a space through a harness's door", "key")
    if body.opened_for is not None:
        refuse("invalid_event", "opened_for is filled in by Chips", "opened_for")
    space_id = body.space_id or new_id("spc")
    if not space_id.startswith("spc_"):
        refuse("invalid_event", "a space's id starts with spc_", "space_id")
    if s.space_id_taken(space_id):
        refuse("invalid_event", "that space already exists", "space_id")
    members = list(dict.fromkeys(m for m in body.members if m != actor.id))
    if body.asked_of is not None:
        check_asked(s, body.asked_of)
        if body.asked_of not in members:
            members.append(body.asked_of)  # every face picked is put in it (docs/product/spaces.md)
    for member in members:
        if s.participant(member) is None:
            refuse("not_found", f"no participant {member} in this workspace", "members")
    if body.kind == "direct" and not members:
        refuse("invalid_event", "a direct space names who it is with", "members")
    if body.home_of is not None:
        check_home(s, body, actor, members)
    seq = ctx.seq
    space = Space(
        space_id,
        body.kind,
        body.title,
        created_by=actor.id,
        created_seq=seq,
        home_of=body.home_of,
        asked_of=body.asked_of,
    )
    changes: list[Change] = [PutSpace(space), AddMember(space_id, actor.id, "owner", seq)]
    changes += [AddMember(space_id, member, "member", seq) for member in members]
    return Decision({"space_id": space_id, "members": members}, changes)


def check_asked(s: DoorState, harness_id: str) -> None:
    """docs/product/spaces.md: "only a harness that declares new_spaces may be asked"."""
    harness = s.participant(harness_id)
    if harness is None or harness.kind != "harness":
        refuse("not_found", "no such harness in this workspace", "asked_of")
    if "new_spaces" not in harness.capabilities:
        refuse(
            "forbidden",
            "that harness does not take new spaces (it never declared new_spaces)",
            "asked_of",
        )


def check_home(s: DoorState, body: SpaceCreated, actor: Actor, members: list[str]) -> None:
    """A harness's home is the direct space its owner is handed with it, and only that."""
    harness = s.participant(body.home_of or "")
    if harness is None or harness.kind != "harness" or harness.owner_id != actor.id:
        refuse("forbidden", "a home is opened for a harness you connect", "home_of")
    if body.kind != "direct" or members != [harness.id]:
        refuse("invalid_event", "a home is a direct space with you and the harness", "home_of")
    if s.home_of(harness.id) is not None:
        refuse("invalid_event", "that harness has its home already", "home_of")


def check_membership_added(s: DoorState, body: MembershipAdded, actor: Actor, ctx: Ctx) -> Decision:
    # docs/product/spaces.md, Who may do what in a space: members and owners add; a guest
    # talks and leaves; a harness talks and works.
    standing = check_member(s, body.space_id, actor)
    if kind_of(actor) == "harness":
        refuse("forbidden", "a harness talks and works in a space; it adds nobody")
    refuse_if(may.add(standing))
    if body.standing == "owner" and standing != "owner":
        refuse("forbidden", "only the space's owner makes another owner", "standing")
    if body.standing == agents.BEHIND:
        refuse("invalid_event", "standing agents is written by Chips itself", "standing")
    joining = s.participant(body.participant_id)
    if joining is None:
        refuse("not_found", "no such participant in this workspace", "participant_id")
    if joining.kind == "agent":  # where an agent may be is one rule (docs/adr/0071)
        if body.standing != "member":
            refuse("invalid_event", "an agent is a member of the room it is in", "standing")
        agents.check_enter(s, joining, body.space_id)
    elif joining.kind == "harness":
        refuse_if(may.harness_entry(agents.main_room_of(s, body.space_id) is not None))
    if s.standing(body.space_id, body.participant_id):
        refuse("invalid_event", "already a member of this space", "participant_id")
    return Decision(changes=[AddMember(body.space_id, body.participant_id, body.standing, ctx.seq)])


def check_membership_removed(
    s: DoorState, body: MembershipRemoved, actor: Actor, ctx: Ctx, *, given_only: bool = False
) -> Decision:
    """``given_only``: the harness taken out stands here only behind the agent Chips gave
    it, which goes with it (docs/adr/0154: a harness before agents knows no agent to take
    out, and a person may name either)."""
    standing = check_member(s, body.space_id, actor)
    if body.standing is not None:
        refuse("invalid_event", "standing agents is written by Chips itself", "standing")
    if body.participant_id != actor.id and kind_of(actor) == "harness":
        refuse("forbidden", "a harness talks and works in a space; it removes nobody")
    refuse_if(may.remove(standing, actor.id, body.participant_id))
    leaving = s.standing(body.space_id, body.participant_id)
    if not leaving:
        refuse("invalid_event", "not a member of this space", "participant_id")
    gone = s.participant(body.participant_id)
    main = gone is not None and gone.kind == "agent" and agents.facts_of(gone).main
    if given_only and leaving == agents.BEHIND:
        leaving = "member"
    refuse_if(may.removable(leaving, main, gone.name if gone is not None else ""))
    if kind_of(actor) == "harness":
        space = s.space(body.space_id)
        if space is not None and space.home_of == harness_of(actor):
            refuse("forbidden", "a harness stays in its home")
    return Decision(changes=[RemoveMember(body.space_id, body.participant_id, ctx.seq)])


def check_space_updated(s: DoorState, body: SpaceUpdated, actor: Actor, ctx: Ctx) -> Decision:
    """Retitle, archive or unarchive (docs/product/spaces.md, Retitling and archiving)."""
    if body.state == "open" and archived_with_its_agents(s, body.space_id, actor):
        standing = "agents"  # its archive took the harness out with its agents: it may reopen
    else:
        standing = check_member(s, body.space_id, actor)
    space = s.space(body.space_id)
    if space is None:  # a member of a space that is not there: door state is broken
        refuse("forbidden", "you are not a member of this space", "space_id")
    if kind_of(actor) == "harness":
        if not s.opened(space.id, harness_of(actor) or actor.id):
            refuse("forbidden", "a harness retitles or closes only a space it opened itself")
    elif actor.kind != "person":
        refuse("forbidden", "a space is retitled and archived by who is in it")
    else:
        refuse_if(may.person_change(room_facts(space), standing))
    refuse_if(may.state_change(room_facts(space), body.state))
    if body.title is not None and body.title == space.title:
        refuse("invalid_event", "that is the space's title already", "title")
    changed = space
    if body.state is not None:
        changed = replace(changed, state=body.state)
    if body.title is not None:
        changed = replace(changed, title=body.title)
        if actor.kind == "person":
            changed = replace(changed, title_held=True)
    return Decision(changes=[PutSpace(changed)])


def archived_with_its_agents(s: DoorState, space_id: str, actor: Actor) -> bool:
    """Whether ``actor`` is a harness (or one of its agents) that opened the room, whose
    agents the room's archive released: archiving a room releases its agents, and the
    harness behind only them leaves with them, but the room it opened is still its to
    unarchive (docs/adr/0154)."""
    harness_id = harness_of(actor)
    if harness_id is None or not s.opened(space_id, harness_id):
        return False
    return any(
        a.agent is not None and a.agent.left_why == "archived" and a.agent.left_space_id == space_id
        for a in s.agents_of(harness_id)
    )


def check_space_lock_set(s: DoorState, body: SpaceLockSet, actor: Actor, ctx: Ctx) -> Decision:
    """``POST /v1/spaces/:id/lock``: a person's, the room's owner or a workspace's."""
    standing = check_member(s, body.space_id, actor)
    space = s.space(body.space_id)
    if space is None:
        refuse("forbidden", "you are not a member of this space", "space_id")
    if actor.kind != "person":
        refuse("forbidden", "locking a room's changes is a person's to do")
    refuse_if(may.lock_change(room_facts(space), standing, role_of(s, actor), body.locked))
    return Decision(changes=[PutSpace(replace(space, locked=body.locked))])


def agents_moved(s: DoorState, body: object, actor: Actor, ctx: Ctx) -> agents.Plan | None:
    """A room operation that moves agents, as the steps it logs; None for any other.

    A person's add of an agent enters it (its harness first, then the add, then
    ``agent.attached``); taking one out releases it (its runs there cancelled first); an
    archive stops every run in the room and releases its agents before the room closes;
    an unarchive brings back, after the room opens, the agents its archive released.
    Each operation's own rule is decided first, so it is refused for its own reason.
    """
    match body:
        case MembershipAdded() if body.participant_id.startswith("agt_"):
            check_membership_added(s, body, actor, ctx)
            plan = agents.Plan(s, ctx.seq)
            agents.enter(plan, body.participant_id, body.space_id, actor, added=body)
            return plan
        case MembershipRemoved() if body.participant_id.startswith("agt_"):
            check_membership_removed(s, body, actor, ctx)
            plan = agents.Plan(s, ctx.seq)
            agents.leave(plan, body.participant_id, body.space_id, "removed", actor, removed=body)
            return plan
        case MembershipRemoved() if body.participant_id.startswith("hrn_"):
            # A harness taken out (or leaving) takes its agents there with it: each is
            # released first, then the harness's own runs stop and it goes.
            plan = agents.Plan(s, ctx.seq)
            mine = plan.agents_here(s.room_of(body.space_id), body.participant_id)
            if not mine:
                return None
            given_only = all(given.is_given(p) for a in mine if (p := s.participant(a)))
            check_membership_removed(s, body, actor, ctx, given_only=given_only)
            behind = s.standing(body.space_id, body.participant_id) == agents.BEHIND
            for agent_id in mine:
                agents.leave(plan, agent_id, body.space_id, "removed", actor)
            if behind:  # its last agent's leave took it out (and stopped its runs there)
                return plan
            running = stopping.runs_to_stop(s, body.space_id, body.participant_id)
            plan.cancel(running, stopping.LEFT, actor)
            plan.add(body, actor, [plan.left(body.space_id, body.participant_id)])
            return plan
        case SpaceUpdated() if body.state is not None and s.room_of(body.space_id) == body.space_id:
            room = body.space_id
            plan = agents.Plan(s, ctx.seq)
            if body.state == "closed" and not plan.agents_here(room, None):
                return None
            decided = check_space_updated(s, body, actor, ctx)
            if body.state == "closed":
                agents.archive_room(plan, room, actor)
            changes = [
                plan.put_space(c.space) if isinstance(c, PutSpace) else c for c in decided.changes
            ]
            plan.add(body, actor, changes)
            if body.state == "open":
                agents.bring_back(plan, room, actor)
                if len(plan.steps) == 1:
                    return None  # nobody came back: decided as any space.updated
            return plan
    return None
