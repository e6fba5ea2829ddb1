"""What is done to a message after it is posted (docs/product/messages.md): edit, take back,
delete for me, pin, and feedback.

Each reads the message from the snapshot's window of messages (the batch reads one
outside it from the log first, ``state_store.prefetch``) and what has been done to it
since from its marks.
"""

from __future__ import annotations

from dataclasses import replace

from chips_common.append import Actor
from chips_common.events import (
    Feedback,
    MessageDeleted,
    MessageEdited,
    MessageHidden,
    MessagePinned,
    MessageShown,
    MessageUnpinned,
)
from chips_common.rules import may
from chips_eventlog.refused import refuse, refuse_if
from chips_eventlog.rules.common import Ctx, check_member, role_of
from chips_eventlog.state import Decision, DoorState, Mark, PutMark, Said, SetHidden, SetReaction


def message_in(s: DoorState, space_id: str, message_id: str, *, live: bool = True) -> Said:
    """The message, which must be in ``space_id`` (and not taken back, when ``live``)."""
    found = s.said(message_id)
    if found is None or found.space_id != space_id:
        refuse("not_found", "message_id names no message in this space", "message_id")
    if live and found.deleted:
        refuse("invalid_event", "that message was taken back; it takes nothing more", "message_id")
    return found


def marked(s: DoorState, said: Said, **values: object) -> PutMark:
    """What was done to a message, added to its marks."""
    mark = s.marks.get(said.message_id) or Mark(said.space_id)
    return PutMark(said.message_id, replace(mark, **values))  # type: ignore[arg-type]


def check_edited(s: DoorState, body: MessageEdited, actor: Actor, ctx: Ctx) -> Decision:
    """Only the author changes a message's words, and only while it stands."""
    check_member(s, body.space_id, actor)
    said = message_in(s, body.space_id, body.message_id)
    if said.author_id != actor.id:
        refuse("forbidden", "only the author of a message may edit it", "message_id")
    if said.kind == "system":
        refuse("forbidden", "a system line is not edited", "message_id")
    return Decision(changes=[marked(s, said, edited_seq=ctx.seq)])


def check_deleted(s: DoorState, body: MessageDeleted, actor: Actor, ctx: Ctx) -> Decision:
    """Taken back by its author, the room's owner, or a workspace owner or admin."""
    standing = check_member(s, body.space_id, actor)
    said = message_in(s, body.space_id, body.message_id, live=False)
    if said.deleted:
        refuse("invalid_event", "that message was taken back already", "message_id")
    refuse_if(may.take_back(standing, role_of(s, actor), said.author_id == actor.id))
    return Decision(changes=[marked(s, said, deleted_seq=ctx.seq, pinned=False)])


def check_hidden(
    s: DoorState, body: MessageHidden | MessageShown, actor: Actor, ctx: Ctx
) -> Decision:
    """Delete for me, and its undo: a person's own room, anyone's message, a tombstone too."""
    if actor.kind != "person":
        refuse("forbidden", f"{body.type} is a person's; a harness may not send it")
    check_member(s, body.space_id, actor)
    said = message_in(s, body.space_id, body.message_id, live=False)
    hidden = s.is_hidden(said.message_id, actor.id)
    hide = isinstance(body, MessageHidden)
    if hide and hidden:
        refuse("invalid_event", "you have hidden that message already", "message_id")
    if not hide and not hidden:
        refuse("invalid_event", "you have not hidden that message", "message_id")
    return Decision(changes=[SetHidden(said.message_id, actor.id, said.space_id, hide)])


def check_pinned(
    s: DoorState, body: MessagePinned | MessageUnpinned, actor: Actor, ctx: Ctx
) -> Decision:
    """Anyone in the room but a guest pins a standing message, and lets it go."""
    standing = check_member(s, body.space_id, actor)
    refuse_if(may.pin(standing))
    said = message_in(s, body.space_id, body.message_id)
    pin = isinstance(body, MessagePinned)
    if pin and said.pinned:
        refuse("invalid_event", "that message is pinned already", "message_id")
    if not pin and not said.pinned:
        refuse("invalid_event", "that message is not pinned", "message_id")
    return Decision(changes=[marked(s, said, pinned=pin)])


def check_feedback(s: DoorState, body: Feedback, actor: Actor, ctx: Ctx) -> Decision:
    """A person's reaction or correction (docs/product/messages.md, Feedback).

    A correction is on a harness's words in this room and nothing else; a reaction on
    anybody's. The same emoji from the same person again takes the reaction back.
    """
    if actor.kind != "person":
        refuse("forbidden", "feedback is a person's to give")
    standing = check_member(s, body.space_id, actor)
    found = s.said(body.message_id)
    if found is None:
        refuse("not_found", "message_id names no message anybody sent", "message_id")
    if found.space_id != body.space_id:
        refuse("invalid_event", "that message was said in another space", "message_id")
    if found.deleted:
        refuse("invalid_event", "that message was taken back; it takes nothing more", "message_id")
    filled: dict[str, object] = {"about": found.author_id, "standing": standing}
    if found.author_kind == "agent":  # its harness hears it too (docs/adr/0070)
        author = s.participant(found.author_id)
        if author is not None and author.owner_id is not None:
            filled["harness_id"] = author.owner_id
    if body.kind == "correction":
        if found.author_kind not in ("harness", "agent") or found.kind == "system":
            refuse(
                "invalid_event",
                "a correction is on a harness's words; this message is not a harness's",
                "message_id",
            )
        return Decision(dict(filled))
    assert body.emoji is not None  # the catalogue refuses a reaction without one
    withdrawn = s.reacted(found.message_id, actor.id, body.emoji)
    if withdrawn:
        filled["withdrawn"] = True
    change = SetReaction(found.message_id, actor.id, body.emoji, found.space_id, not withdrawn)
    return Decision(dict(filled), [change])
