"""Deleting a space at the door: ``space.erased`` (spec/spaces.md, Deleting one).

Deleting erases: inside the append transaction that logs ``space.erased``, every event of
the space and of its threads is deleted from ``events`` (and the outbox), and the door
state that held anything of it is cleared. The space's row stays as a tombstone
(``state = 'erased'``, no title, no key) so its id is never given out again, and its
membership log is closed at the erasure's seq so that the gateway still sends the
``space.erased`` to whoever was in it (membership as of that seq). The copies in
``CHIPS_EVENTS`` are purged after the commit (``purge.py``). docs/adr/0010.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, delete, insert, or_, select, true, update

from chips_common.append import Actor
from chips_common.db import run_tables as rt
from chips_common.db import tables as t
from chips_common.events import SpaceErased, SpaceUpdated
from chips_eventlog import stopping

if TYPE_CHECKING:
    from chips_eventlog.door import Door, Space


async def admit_space_erased(door: Door, body: SpaceErased, actor: Actor) -> None:
    """Decide a delete, and stage what it becomes: ``space.erased``, or for a direct space
    nobody could open again, ``space.updated`` archiving it instead."""
    from chips_eventlog.door import Refused

    standing = await door.check_member(body.space_id, actor)
    space = await door.space(body.space_id)
    if space is None:
        raise Refused("forbidden", "you are not a member of this space", "space_id")
    if space.kind == "thread":
        raise Refused("invalid_event", "a thread goes with its room: delete the room", "space_id")
    if actor.kind != "person":
        raise Refused(
            "forbidden",
            "a space is deleted by a person: its owner, or a workspace owner or admin",
        )
    me = await door.participant(actor.id)
    if standing != "owner" and (me is None or me.role not in ("owner", "admin")):
        raise Refused(
            "forbidden", "only the room's owner, or a workspace owner or admin, deletes it"
        )
    if space.home_of is not None:
        raise Refused("forbidden", "a harness's home is never deleted")
    if space.locked:
        raise Refused("forbidden", "this room's changes are locked; unlock it to delete it")
    if space.kind == "direct" and space.key is None:
        await archive_instead(door, space, actor)
        return
    # A room that is deleted stops every run in it first, as an archive does
    # (websocket.md, One room at a time): those run.cancel outlive the room, so that its
    # harnesses hear them.
    running = await stopping.runs_to_stop(door, space.id, None)
    spared = await stopping.stop(door, running, stopping.DELETED, actor)
    filled = await erase(door, space, actor, spared)
    door.stage(body, filled, actor)


async def archive_instead(door: Door, space: Space, actor: Actor) -> None:
    """A direct space nobody could open again is archived rather than deleted."""
    from chips_eventlog.door import Refused

    if space.state == "closed":
        raise Refused(
            "invalid_event",
            "nobody could open this direct space again, so it is archived rather than "
            "deleted, and it is archived already",
        )
    # Decided as any archive, so it stops the room's runs first.
    await door.decide(SpaceUpdated(space_id=space.id, state="closed"), actor, None)


async def erase(
    door: Door, space: Space, actor: Actor, spared: list[int] | None = None
) -> dict[str, Any]:
    """Delete everything of the space and its threads; say what the event carries.

    ``spared`` are the seqs of the ``run.cancel`` events the deletion sent first: they name
    only a run and why it stopped, and stay in the log and are published, so that the
    run's harness hears them (:mod:`chips_eventlog.stopping`).
    """
    kept = spared or []
    ws = door.workspace_id
    seq = door.head_seq + 1
    # Events of this space let in earlier in the same batch are written first, so that
    # the one delete below takes them too.
    await door.flush()
    threads = [
        row.id
        for row in await door.conn.execute(
            select(t.spaces.c.id)
            .where(and_(t.spaces.c.workspace_id == ws, t.spaces.c.parent_space_id == space.id))
            .order_by(t.spaces.c.created_seq)
        )
    ]
    erased = [space.id, *threads]
    follows = await following_harnesses(door, space.id, actor)
    members = [
        row.participant_id
        for row in await door.conn.execute(
            select(t.memberships.c.participant_id).where(t.memberships.c.space_id == space.id)
        )
    ]
    gone = list(
        await door.conn.execute(
            delete(t.events)
            .where(
                and_(
                    t.events.c.workspace_id == ws,
                    t.events.c.space_id.in_(erased),
                    # Spend already recorded stays on the harness's account (spaces.md):
                    # a usage report carries counts and a cost, no words (ADR 0010).
                    t.events.c.type != "usage",
                    t.events.c.seq.notin_(kept) if kept else true(),
                )
            )
            .returning(t.events.c.seq, t.events.c.body["message_id"].astext.label("message_id"))
        )
    )
    seqs = [row.seq for row in gone]
    said = [row.message_id for row in gone if row.message_id]
    if seqs:
        await door.conn.execute(
            delete(t.outbox).where(and_(t.outbox.c.workspace_id == ws, t.outbox.c.seq.in_(seqs)))
        )
    for table in (t.memberships, t.space_openers, t.address_choices, t.message_marks):
        await door.conn.execute(delete(table).where(table.c.space_id.in_(erased)))
    for table in (t.message_hidden, t.reactions):
        await door.conn.execute(delete(table).where(table.c.message_id.in_(said)))
    # Runs in the room are gone with it (what their harness sends after is refused), and
    # so is every lane into or out of it: a lane's events are logged in both its rooms.
    for table in (rt.runs, rt.run_cards):
        await door.conn.execute(
            delete(table).where(and_(table.c.workspace_id == ws, table.c.space_id.in_(erased)))
        )
    await door.conn.execute(
        delete(rt.lanes).where(
            and_(
                rt.lanes.c.workspace_id == ws,
                or_(rt.lanes.c.from_space_id.in_(erased), rt.lanes.c.to_space_id.in_(erased)),
            )
        )
    )
    for who in members:
        # Whoever was in it is in it up to this seq and no further: the gateway sends them
        # the space.erased by membership as of its seq (DESIGN.md §4).
        await door.conn.execute(
            insert(t.membership_log).values(
                workspace_id=ws, seq=seq, space_id=space.id, participant_id=who, added=False
            )
        )
        door._standings[(space.id, who)] = None
    door._rooms.pop(space.id, None)
    await door.conn.execute(
        update(t.spaces)
        .where(t.spaces.c.id.in_(erased))
        .values(state="erased", title=None, key=None, key_shared=False, asked_of=None)
    )
    await door.conn.execute(insert(t.erasures).values(workspace_id=ws, seq=seq))
    door.erased.update(erased)
    door.spared.update(kept)
    return {
        "threads": threads,
        "follows": [{"harness_id": h, "delete": d} for h, d in follows],
    }


async def following_harnesses(door: Door, space_id: str, actor: Actor) -> list[tuple[str, bool]]:
    """The harnesses in the room that declared ``follows_rooms``, each with whether the
    person deleting it owns the harness (delete its side too) or not (archive it there)."""
    p = t.participants.c
    rows = await door.conn.execute(
        select(p.id, p.owner_id, p.capabilities)
        .select_from(t.memberships.join(t.participants, t.memberships.c.participant_id == p.id))
        .where(and_(t.memberships.c.space_id == space_id, p.kind == "harness"))
        .order_by(t.memberships.c.since_seq, p.id)
    )
    return [
        (row.id, row.owner_id == actor.id) for row in rows if "follows_rooms" in row.capabilities
    ]
