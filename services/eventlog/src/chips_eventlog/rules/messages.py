"""Posting: ``message.post`` (addressing, kinds, hand-offs, receipts), a harness's
``NO_REPLY`` (``turn.passed``), and a person's composer commands (ADR 0008).

``mentions`` and ``addressed_to`` are decided once, here, and written into the event
(docs/architecture/design.md §2), so every reader sees the same answer and a replay reproduces it.
"""

from __future__ import annotations

from chips_common.append import Actor
from chips_common.events import (
    EventBody,
    Feedback,
    MembershipAdded,
    MembershipRemoved,
    MessagePost,
    SpaceUpdated,
    TurnPassed,
)
from chips_common.rules.addressing import address
from chips_common.rules.agents_view import GIVEN_KEY
from chips_common.rules.commands import Command, CommandError, resolve_handle
from chips_common.rules.handles import Member
from chips_common.rules.kinds import refusal
from chips_eventlog.refused import refuse
from chips_eventlog.rules.common import PARTICIPANTS, Ctx, check_member, kind_of
from chips_eventlog.rules.files import check_post_files
from chips_eventlog.rules.referee import count_post
from chips_eventlog.rules.runs import with_receipt
from chips_eventlog.state import Change, Decision, DoorState, PutChoice


def check_message_post(s: DoorState, body: MessagePost, actor: Actor, ctx: Ctx) -> Decision:
    if body.held_since is not None and ctx.request is not None:
        # What a free agent said, posted by Chips where it joins (rules/agents/).
        refuse("invalid_event", "held_since is filled in by Chips; leave it out", "held_since")
    attachments, posted = check_post_files(s, body, actor, ctx)
    check_member(s, body.space_id, actor)
    why = refusal(body.kind, kind_of(actor))  # an agent posts what its harness may
    if why is not None:
        refuse("forbidden", why, "kind")
    if body.handoff is not None and s.standing(body.space_id, body.handoff.recipient) is None:
        refuse("not_found", "a hand-off goes to somebody in this room", "handoff.recipient")
    decision = address_message(s, body, actor)
    decision = count_post(s, body, actor, decision, attachments)
    if attachments is not None:
        decision.filled["attachments"] = attachments
        decision.changes.extend(posted)
    decision.filled = with_receipt(s, body, actor, ctx.request, decision.filled)
    return decision


def check_turn_passed(s: DoorState, body: MessagePost, actor: Actor) -> TurnPassed:
    """A harness's ``NO_REPLY``: logged as turn.passed, not as a message
    (docs/product/websocket.md)."""
    check_member(s, body.space_id, actor)
    if body.reply_to and message_author(s, body.space_id, body.reply_to) is None:
        refuse("not_found", "reply_to names no message in this space", "reply_to")
    return TurnPassed(space_id=body.space_id, reply_to=body.reply_to)


def message_author(s: DoorState, space_id: str, message_id: str) -> Member | None:
    """Who said a message of this space (a reply's addressee), or None."""
    said = s.said(message_id)
    if said is None or said.space_id != space_id or said.author_kind not in PARTICIPANTS:
        return None
    return Member(said.author_id, said.author_kind, "")


def one_agent_of(s: DoorState, space_id: str, harness_id: str) -> str | None:
    """A harness's one agent in the room, which a ``to`` naming the harness picks, as its
    name is an @handle for it (docs/adr/0154: a person's client that knows the harness's
    id, and not the agent Chips gave it there, still picks it); None otherwise."""
    if not harness_id.startswith("hrn_"):
        return None
    here = [
        pid
        for pid in s.members.get(space_id, {})
        if (p := s.participant(pid)) is not None and p.kind == "agent" and p.owner_id == harness_id
    ]
    return here[0] if len(here) == 1 else None


def address_message(s: DoorState, body: MessagePost, actor: Actor) -> Decision:
    """Fill in ``mentions`` and ``addressed_to``, once, at append (docs/architecture/design.md
    §2)."""
    members = s.room_members(body.space_id)
    sender = next((m for m in members if m.id == actor.id), None)
    if sender is None:  # an operator or system writer: the words are for the people
        return Decision({"mentions": [], "addressed_to": []})
    reply_author = None
    if body.reply_to:
        reply_author = message_author(s, body.space_id, body.reply_to)
        if reply_author is None:
            refuse("not_found", "reply_to names no message in this space", "reply_to")
    text = body.text or ""
    to = body.to
    if to is None and body.handoff is not None:  # a hand-off is for its recipient
        to = [body.handoff.recipient]
    if to is not None:
        to = [one_agent_of(s, body.space_id, t) or t for t in to]
    decided = address(sender=sender, text=text, members=members, to=to, reply_author=reply_author)
    if decided.rule == "5:last":  # only then does the sender's last choice matter
        decided = address(
            sender=sender,
            text=text,
            members=members,
            to=to,
            reply_author=reply_author,
            last_choice=s.choice(body.space_id, actor.id),
        )
    changes: list[Change] = []
    if decided.choice is not None:
        changes.append(PutChoice(body.space_id, actor.id, decided.choice))
    return Decision({"mentions": decided.mentions, "addressed_to": decided.addressed_to}, changes)


def composer_events(s: DoorState, space_id: str, command: Command, actor: Actor) -> list[EventBody]:
    """A person's composer command, as the room operations it names (ADR 0008).

    Each event it becomes is then decided by the same rule as when it is sent as itself.
    """
    check_member(s, space_id, actor)
    bodies: list[EventBody] = []
    if command.name == "add":
        # Not an agent Chips gave a harness for a room: it is its harness in that room,
        # and bears its name (docs/adr/0154); adding the harness gives it one here.
        people = [(pid, name) for pid, name in s.directory() if not given_agent(s, pid)]
        for handle in command.handles:
            who = resolve(handle, people)
            bodies.append(MembershipAdded(space_id=space_id, participant_id=who))
    elif command.name == "remove":
        people = s.directory(space_id)
        for handle in command.handles:
            who = resolve(handle, people)
            bodies.append(MembershipRemoved(space_id=space_id, participant_id=who))
    elif command.name == "leave":
        bodies.append(MembershipRemoved(space_id=space_id, participant_id=actor.id))
    elif command.name == "title":
        bodies.append(SpaceUpdated(space_id=space_id, title=command.title))
    elif command.name == "wrong":
        said = s.last_harness_said.get(space_id)
        if said is None:
            refuse("not_found", "no harness has said anything here to correct", "text")
        bodies.append(
            Feedback(space_id=space_id, message_id=said, kind="correction", note=command.note)
        )
    else:
        state = "closed" if command.name == "archive" else "open"
        bodies.append(SpaceUpdated(space_id=space_id, state=state))
    return bodies


def given_agent(s: DoorState, pid: str) -> bool:
    p = s.participant(pid)
    return p is not None and p.agent is not None and p.agent.key.startswith(GIVEN_KEY)


def resolve(handle: str, people: list[tuple[str, str]]) -> str:
    try:
        return resolve_handle(handle, people)
    except CommandError as exc:
        code = "not_found" if str(exc).startswith("nobody") else "invalid_event"
        refuse(code, str(exc), "text")
