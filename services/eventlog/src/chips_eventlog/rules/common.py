"""What every rule module shares: the context of a decision and the membership check."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from chips_common.append import Actor, AppendRequest
from chips_common.events import EventBody
from chips_eventlog.refused import refuse
from chips_eventlog.state import Decision, DoorState

# The actors that are participants (an operator or Chips itself is not).
PARTICIPANTS = ("person", "harness")


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


@dataclass(frozen=True)
class Step:
    """One event a command or a two-room event logs, with what deciding it changed."""

    body: EventBody
    actor: Actor
    decision: Decision


def check_member(s: DoorState, space_id: str, actor: Actor) -> str:
    """The actor's standing in the space; anyone not in it is refused.

    A space that does not exist and one the actor is not in are refused alike, so a
    refusal never tells a stranger which rooms exist.
    """
    standing = s.standing(space_id, actor.id)
    if standing is None:
        refuse("forbidden", "you are not a member of this space", "space_id")
    return standing
