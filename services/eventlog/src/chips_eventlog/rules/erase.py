"""Deleting a space: ``space.erased`` (docs/product/spaces.md, Deleting one; docs/adr/0010).

Deleting erases: in the transaction that logs ``space.erased``, every event of the space
and of its threads is deleted from the log, and the door state that held anything of it
is cleared (``EraseSpaces``). The space's row stays as a tombstone so its id is never
given out again, and its membership is closed at the erasure's seq so that the gateway
still sends the ``space.erased`` to whoever was in it. A direct space nobody could open
again is archived instead.
"""

from __future__ import annotations

from chips_common.append import Actor
from chips_common.events import SpaceErased, SpaceUpdated
from chips_common.rules import may
from chips_eventlog.refused import refuse, refuse_if
from chips_eventlog.rules.common import Ctx, check_member, role_of, room_facts
from chips_eventlog.state import Decision, DoorState, EraseSpaces, Space


def check_space_erased(
    s: DoorState, body: SpaceErased, actor: Actor, ctx: Ctx, spared: list[int] | None = None
) -> Decision | SpaceUpdated:
    """Decide a delete: the erasure, or for a direct space nobody could open again, the
    ``space.updated`` archiving it instead (decided then by its own rule). ``spared`` are
    the seqs of the ``run.cancel`` the deletion sent first, which stay in the log."""
    standing = check_member(s, body.space_id, actor)
    space = s.space(body.space_id)
    if space is None:
        refuse("forbidden", "you are not a member of this space", "space_id")
    if space.kind != "thread" and actor.kind != "person":
        refuse(
            "forbidden",
            "a space is deleted by a person: its owner, or a workspace owner or admin",
        )
    refuse_if(may.erase(room_facts(space), standing, role_of(s, actor)))
    if may.archives_instead(room_facts(space)):
        return archive_instead(space)
    threads = s.threads_of(space.id)
    follows = following_harnesses(s, space.id, actor)
    return Decision(
        {
            "threads": threads,
            "follows": [{"harness_id": h, "delete": d} for h, d in follows],
        },
        [EraseSpaces(space.id, (space.id, *threads), ctx.seq, tuple(spared or ()))],
    )


def archive_instead(space: Space) -> SpaceUpdated:
    """A direct space nobody could open again is archived rather than deleted."""
    refuse_if(may.archive_instead(room_facts(space)))
    return SpaceUpdated(space_id=space.id, state="closed")


def following_harnesses(s: DoorState, space_id: str, actor: Actor) -> list[tuple[str, bool]]:
    """The harnesses in the room that declared ``follows_rooms``, each with whether the
    person deleting it owns the harness (delete its side too) or not (archive it there)."""
    here = sorted(s.members.get(space_id, {}).items(), key=lambda m: (m[1].since_seq, m[0]))
    found = [s.participant(pid) for pid, _ in here]
    return [
        (p.id, p.owner_id == actor.id)
        for p in found
        if p is not None and p.kind == "harness" and "follows_rooms" in p.capabilities
    ]
