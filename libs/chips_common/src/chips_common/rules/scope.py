"""Who is delivered which event: membership as of each event's seq (DESIGN.md §4).

A credential sees the events of the spaces its participant is a member of, and the
workspace-wide events that belong to no space. Membership is folded from the stream
itself, so the decision for event N uses membership as of N, whether the event comes
from a replay or live.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def opened_with(event: dict[str, Any]) -> list[str]:
    """Who a ``space.created`` puts in the space: its opener, the owner a harness opened it
    for, and the members it names."""
    opener = (event.get("actor") or {}).get("id")
    found = [opener, event.get("opened_for"), *(event.get("members") or ())]
    return list(dict.fromkeys(p for p in found if p))


class MembershipView:
    """The spaces one participant is in, kept current by folding events in seq order."""

    def __init__(self, participant_id: str, spaces: Iterable[str] = ()) -> None:
        self.participant_id = participant_id
        self.spaces: set[str] = set(spaces)

    def fold(self, event: dict[str, Any]) -> bool:
        """Apply ``event`` and say whether the participant is to be delivered it.

        A membership change about the participant is delivered to them on both sides:
        being added (they are in once it lands) and being removed (they were in before).
        """
        space_id = event.get("space_id")
        kind = event.get("type")
        me = self.participant_id
        if kind == "space.created":
            # A harness opens a space for its owner (opened_for), who is in it with it.
            if me in opened_with(event):
                self.spaces.add(space_id)  # type: ignore[arg-type]
        elif kind == "membership.added" and event.get("participant_id") == me:
            self.spaces.add(space_id)  # type: ignore[arg-type]
        elif kind == "membership.removed" and event.get("participant_id") == me:
            was_in = space_id in self.spaces
            self.spaces.discard(space_id)
            return was_in
        if space_id is None:
            return True
        return space_id in self.spaces
