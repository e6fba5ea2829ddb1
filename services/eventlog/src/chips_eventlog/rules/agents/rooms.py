"""The one rule for an agent entering a room (:func:`refusal_to_enter`), entering and
leaving, and what a room's archive, unarchive or deletion does to the agents in it.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from chips_common.append import Actor
from chips_common.events import (
    AgentAttached,
    AgentReleased,
    AgentUpdated,
    MembershipAdded,
    MembershipRemoved,
    MessagePost,
)
from chips_common.events.agents import ReleaseReason
from chips_common.rules import may
from chips_common.rules.agents_view import GIVEN_KEY
from chips_eventlog.refused import Refused
from chips_eventlog.rules import stopping
from chips_eventlog.rules.agents.plan import (
    BEHIND,
    STOP_WHY,
    HeldPost,
    Plan,
    facts_of,
    main_room_of,
    run_agent,
)
from chips_eventlog.rules.common import room_facts
from chips_eventlog.state import (
    Change,
    DoorState,
    Participant,
    PutHeld,
)

# --- the one rule for entering a room --------------------------------------------------------


def refusal_to_enter(
    s: DoorState | Plan, agent: Participant, space_id: str, *, moving: bool = False
) -> Refused | None:
    """Why ``agent`` may not enter ``space_id`` now, or None when it may.

    ``moving``: the agent is taken out of the room it is in first (attach, a move), so
    being elsewhere does not stop it. docs/product/websocket.md: a person adding an agent that is
    in another room is refused ``agent_elsewhere`` with that room; an archived room takes
    no agent (``room_closed``); the Main agent stays in its Main room, which takes people
    and no other agent (``lead_room``).
    """
    facts = facts_of(agent)
    space = s.space(space_id)
    if facts.state == "active" and (space is None or space.state == "erased"):
        return Refused("not_found", "no such room in this workspace", "space_id")
    state = s.s if isinstance(s, Plan) else s
    no = may.agent_entry(
        agent.name,
        active=facts.state == "active",
        main=facts.main,
        main_home_here=facts.main and state.home_of(agent.owner_id or "") == space_id,
        room=room_facts(space) if space is not None else may.Room("room", "erased", False),
        main_room=not facts.main and main_room_of(s, space_id) is not None,
    )
    if no is not None:
        return Refused(no.code, no.message, no.field)
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
    # An archive releases the agent Chips gave the harness there, and the harness stays
    # behind it in the archived room, so that what it knew of the room still holds: it is
    # told the archive and the unarchive, which brings its agent back (docs/adr/0154).
    stays = reason == "archived" and facts_of(agent).key.startswith(GIVEN_KEY)
    harness_goes = (
        members and plan.standing(space_id, harness_id) == BEHIND and not others and not stays
    )
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
    (docs/product/websocket.md, One room at a time: deleted).
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
