"""Who is notified of what, and what marks a notification done (docs/adr/0132).

Pure: the consumer hands each event of the log, with the room as it stood at that event
(its name, kind and the people in it then) and the acting harness's owner, and gets back
the notices to write, one per recipient, and what they settle.

A person is told of:

- ``approval``: an approval they may decide (the harness's owner and the people the card
  names: ``chips_common.rules.deciders``, the door's own rule);
- ``question``: a run's question, asked of the room, to each person in it;
- ``handoff``: a hand-off card whose recipient is them;
- ``mention``: a message that @mentions them;
- ``direct``: a message in a direct room of theirs;
- ``budget``: their room's job warned at 80% of its ceiling, or held at it.

Nobody is told of their own act, nor of a room they were not in at the event. One
message makes at most one notice per person (a hand-off, else a mention, else a direct
message). Done: an approval decided, a question answered or expired, a message taken back
(withdrawn), a run ended (every card it asked), an approval past its ``expires_at``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chips_common.events.messages import words_of
from chips_common.ids import PREFIXES, message_id_for, ulid_part
from chips_common.rules.deciders import approval_deciders

KINDS = ("approval", "question", "handoff", "mention", "budget", "direct")
# The kinds that ask something of the person: they need them until done.
ASKING = frozenset({"approval", "question"})
REASONS = ("answered", "withdrawn", "expired", "run_ended")

# The event types that may make a notice; those that may settle one.
NOTIFYING = frozenset({"approval.request", "question.ask", "message.post", "budget.warning"})
SETTLING = frozenset(
    {
        "approval.resolved",
        "question.answered",
        "question.expired",
        "message.deleted",
        "run.completed",
        "run.failed",
        "run.cancel",
    }
)
RUN_ENDS = frozenset({"run.completed", "run.failed", "run.cancel"})
# Every type the fold may act on; the rest of the log is read past.
ACTED_ON = NOTIFYING | SETTLING

MAX_BODY = 280
# Ids that name no person: harnesses and agents are never told (only people are).
NOT_PEOPLE = (f"{PREFIXES['harness']}_", f"{PREFIXES['agent']}_")


@dataclass(frozen=True)
class Room:
    """The room an event was said in, as it stood at the event."""

    space_id: str
    room_id: str  # whose members are told: a thread's room, else the space itself
    name: str
    kind: str  # direct | group | thread
    people: frozenset[str]  # the people in it (not harnesses)


@dataclass(frozen=True)
class Notice:
    participant_id: str
    kind: str
    title: str
    body: str
    ref_id: str | None
    run_id: str | None
    sole: bool = False
    expires_at: datetime | None = None


@dataclass(frozen=True)
class Settle:
    """Notifications to mark done: those naming ``ref_id``, or every card of ``run_id``."""

    reason: str
    ref_id: str | None = None
    run_id: str | None = None


def notification_id(event_id: str, participant_id: str) -> str:
    """A notification's id: the event's ULID (so ids sort as the log does) and a short
    digest of its recipient. The same event and person always give the same id."""
    digest = hashlib.sha256(participant_id.encode()).hexdigest()[:8]
    return f"ntf_{ulid_part(event_id)}{digest}"


def clip(words: str, limit: int = MAX_BODY) -> str:
    words = " ".join(words.split())
    return words if len(words) <= limit else words[: limit - 1].rstrip() + "…"


def actor_of(event: Mapping[str, Any]) -> str:
    actor = event.get("actor")
    return str(actor.get("id", "")) if isinstance(actor, Mapping) else ""


def harness_of_actor(event: Mapping[str, Any]) -> str:
    """Who logged ``event``, or for an agent its harness (``actor.harness_id``): an
    agent's approval request is decided by its harness's owner, as the door decides it."""
    actor = event.get("actor")
    harness = actor.get("harness_id") if isinstance(actor, Mapping) else None
    return str(harness) if harness else actor_of(event)


def notices(
    event: Mapping[str, Any],
    room: Room,
    owner_of_actor: str | None = None,
    names: Mapping[str, str] | None = None,
) -> list[Notice]:
    """The notices ``event`` makes, one per person told, in a fixed order."""
    kind = event.get("type")
    actor = actor_of(event)
    who = (names or {}).get(actor) or "Somebody"
    told = room.people - {actor}
    if kind == "approval.request":
        deciders = [
            p for p in approval_deciders(owner_of_actor, event.get("answerers")) if p in told
        ]
        action = str(event.get("action", ""))
        preview = event.get("preview") or event.get("args") or ""
        body = clip(f"{action}: {preview}" if preview else action)
        return [
            Notice(
                p,
                "approval",
                f"{who} asks for your approval in {room.name}",
                body,
                event.get("approval_id"),
                event.get("run_id"),
                sole=len(deciders) == 1,
                expires_at=parse_time(event.get("expires_at")),
            )
            for p in deciders
        ]
    if kind == "question.ask":
        asked = sorted(told)
        return [
            Notice(
                p,
                "question",
                f"{who} asks a question in {room.name}",
                clip(str(event.get("prompt", ""))),
                event.get("question_id"),
                event.get("run_id"),
                sole=len(asked) == 1,
            )
            for p in asked
        ]
    if kind == "budget.warning":
        budget = event.get("budget") or {}
        spent = (
            f"${float(budget.get('spent_usd', 0)):.2f} of ${float(budget.get('limit_usd', 0)):.2f}"
        )
        if event.get("action") == "pause":
            title = f"{room.name} is held at its spend ceiling"
        else:
            title = f"{room.name} reached {event.get('threshold', 80)}% of its spend ceiling"
        return [Notice(p, "budget", title, f"Spent {spent}.", None, None) for p in sorted(told)]
    if kind == "message.post":
        return message_notices(event, room, who, told)
    return []


def message_notices(
    event: Mapping[str, Any], room: Room, who: str, told: frozenset[str]
) -> list[Notice]:
    if event.get("held"):
        return []
    message_id = message_id_for(str(event["id"]))
    words = clip(words_of(dict(event)))
    run_id = event.get("run_id")
    found: dict[str, Notice] = {}
    handoff = event.get("handoff")
    if isinstance(handoff, Mapping) and handoff.get("recipient") in told:
        person = str(handoff["recipient"])
        summary = clip(str(handoff.get("summary", "")))
        title = f"{who} handed work to you in {room.name}"
        found[person] = Notice(person, "handoff", title, summary, message_id, run_id, sole=True)
    for person in event.get("mentions") or ():
        if person in told and person not in found:
            title = f"{who} mentioned you in {room.name}"
            found[person] = Notice(person, "mention", title, words, message_id, run_id)
    if room.kind == "direct":
        for person in sorted(told):
            if person not in found:
                title = f"{who} wrote to you"
                found[person] = Notice(person, "direct", title, words, message_id, run_id)
    return [found[p] for p in sorted(found)]


def may_act(
    event: Mapping[str, Any],
    space_kind: str | None = None,
    people: frozenset[str] | None = None,
) -> bool:
    """Whether folding ``event`` may make or settle a notice, from its type and a few of
    its own fields, the kind of its space and, for a direct space, the people in it (each
    when known: ``None`` is unknown). False only when :func:`notices` and :func:`settles`
    surely find nothing in it: a type that neither notifies nor settles, a held message,
    or a message that names no person (it mentions or hands off to harnesses and agents
    only, or nobody) in a space that is not direct, or is direct with nobody in it but its
    author (a person's words to a harness in its home). The consumer acks such an event
    without a transaction, and the fold reads past it (docs/adr/0132)."""
    kind = event.get("type")
    if kind not in ACTED_ON:
        return False
    if kind != "message.post":
        return True
    if event.get("held"):
        return False
    named = list(event.get("mentions") or ())
    handoff = event.get("handoff")
    if isinstance(handoff, Mapping):
        named.append(handoff.get("recipient"))
    if any(not (isinstance(p, str) and p.startswith(NOT_PEOPLE)) for p in named):
        return True
    if space_kind is None:
        return True
    if space_kind != "direct":
        return False
    return people is None or bool(people - {actor_of(event)})


def settles(event: Mapping[str, Any]) -> Settle | None:
    """What ``event`` marks done, if anything."""
    kind = event.get("type")
    if kind == "approval.resolved":
        return Settle("answered", ref_id=event.get("approval_id"))
    if kind == "question.answered":
        return Settle("answered", ref_id=event.get("question_id"))
    if kind == "question.expired":
        return Settle("expired", ref_id=event.get("question_id"))
    if kind == "message.deleted":
        return Settle("withdrawn", ref_id=event.get("message_id"))
    if kind in RUN_ENDS and event.get("run_id"):
        return Settle("run_ended", run_id=event.get("run_id"))
    return None


def parse_time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and value:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return None
