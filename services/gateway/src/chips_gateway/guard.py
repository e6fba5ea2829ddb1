"""Who may read what: one guard for every read path (docs/adr/0039).

Membership is decided as of now, from the door state (``memberships``, which the eventlog
changes in the same transaction as it logs a join or a leave), never from a read model
that a projector fills later, and never by a join written differently in each route:

- :func:`require_member` for a route about one space (a thread counts as its room);
- :func:`spaces_of` for a route that lists several, as a subquery of the space ids;
  :func:`spaces_and_threads_of` when what it lists may also live in their threads;
- :func:`require_harness_or_owner` for a route about one harness;
- :func:`now_visible` for a route that lists spaces a participant is *not* necessarily
  in (a harness's opened rooms): what it may still be shown of each.

The e2e test ``tests/e2e/test_read_matrix.py`` runs every read route against every kind
of reader, and fails on a route that is not in its table.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.sql import Select

from chips_common.db import tables as t
from chips_gateway.auth import Principal
from chips_gateway.context import Ctx
from chips_gateway.errors import ChipsError
from chips_gateway.rows import OpenerSpace


async def require_member(ctx: Ctx, caller: Principal, space_id: str) -> None:
    """The caller is in the space now; a stranger and a missing space look alike."""
    if not await ctx.reader.is_member(space_id, caller.participant_id):
        raise ChipsError("forbidden", "you are not a member of this space", space_id=space_id)


def spaces_of(participant_id: str, workspace_id: str) -> Select[Any]:
    """The ids of the spaces a participant is in now, as a subquery."""
    m = t.memberships.c
    return select(m.space_id).where(
        and_(m.workspace_id == workspace_id, m.participant_id == participant_id)
    )


def spaces_and_threads_of(participant_id: str, workspace_id: str) -> Select[Any]:
    """The ids of the spaces a participant is in now and of their threads, as a subquery.

    A thread has no members of its own: whoever is in its room is in it (docs/product/messages.md,
    Threads), so what was asked or said in a thread is listed with its room's.
    """
    s = t.spaces.c
    rooms = spaces_of(participant_id, workspace_id)
    threads = select(s.id).where(and_(s.workspace_id == workspace_id, s.parent_space_id.in_(rooms)))
    return select(rooms.union_all(threads).subquery().c.space_id)


async def require_harness_or_owner(ctx: Ctx, caller: Principal, harness_id: str) -> None:
    """The harness itself, or the person who connected it."""
    if caller.participant_id == harness_id:
        return
    async with ctx.engine.connect() as conn:
        owner = (
            await conn.execute(
                select(t.participants.c.owner_id).where(
                    and_(
                        t.participants.c.id == harness_id,
                        t.participants.c.workspace_id == caller.workspace_id,
                    )
                )
            )
        ).scalar()
    if owner is None or owner != caller.participant_id:
        raise ChipsError("forbidden", "a harness's spaces are listed for it and for its owner")


# What may be shown of a space its reader is no longer in: what names it, nothing that
# was said or done there (a title, a state, who moved it last) after the reader left.
NAMING_FIELDS = frozenset({"space_id", "key", "shared", "member"})


def now_visible(row: OpenerSpace) -> OpenerSpace:
    """A listed space as its reader may see it: whole while a member, else only its name
    (:data:`NAMING_FIELDS`)."""
    if row["member"]:
        return row
    return {
        "space_id": row["space_id"],
        "key": row["key"],
        "shared": row["shared"],
        "title": None,
        "state": None,
        "open": None,
        "moved_by": None,
        "moved_seq": None,
        "member": row["member"],
    }
