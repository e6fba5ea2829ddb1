"""Space lists, read from the projector's read models; one room's routes are in ``rooms``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from sqlalchemy import ColumnElement, and_, func, or_, select

from chips_common.db import projector_tables as pt
from chips_gateway import rows as typed
from chips_gateway.agents import shown_in_room
from chips_gateway.api import agents, directory, harnesses, rooms
from chips_gateway.api.reads import checkpoint, wait_for_checkpoint
from chips_gateway.context import Caller, Ctx
from chips_gateway.edge import MAX_INT
from chips_gateway.guard import spaces_of

router = APIRouter(prefix="/v1")
router.include_router(rooms.router)
router.include_router(harnesses.router)
router.include_router(agents.router)
router.include_router(directory.router)


@router.get("/spaces", response_model=None)
async def list_spaces(
    ctx: Ctx,
    caller: Caller,
    after_seq: Annotated[int | None, Query(ge=0, le=MAX_INT)] = None,
    archived: bool = False,
    threads: bool = False,
) -> typed.SpaceList:
    """The caller's spaces, newest activity first, with their members.

    Archived spaces are left out and counted in ``archived_count`` (the Archived row at
    the foot of the list); ``archived=true`` lists only them (docs/product/spaces.md, Retitling
    and archiving). ``threads=true`` adds the threads of the caller's rooms, which have
    no members of their own (docs/product/messages.md, Threads; docs/adr/0033).
    """
    ws_id = caller.workspace_id
    as_of = (
        await wait_for_checkpoint(ctx, ws_id, after_seq)
        if after_seq is not None
        else await checkpoint(ctx, ws_id)
    )
    mine = spaces_of(caller.participant_id, ws_id)
    closed = pt.rm_spaces.c.state == "closed"
    listed: ColumnElement[bool] = pt.rm_spaces.c.id.in_(mine)
    if threads:
        listed = or_(listed, pt.rm_spaces.c.parent_space_id.in_(mine))
    async with ctx.engine.connect() as conn:
        spaces = (
            (
                await conn.execute(
                    select(pt.rm_spaces)
                    .where(and_(listed, closed if archived else ~closed))
                    .order_by(pt.rm_spaces.c.last_seq.desc())
                )
            )
            .mappings()
            .all()
        )
        archived_count = (
            await conn.execute(
                select(func.count()).where(and_(pt.rm_spaces.c.id.in_(mine), closed))
            )
        ).scalar_one()
        ids = [s["id"] for s in spaces]
        roots = await rooms.root_texts(conn, spaces)
        members = (
            (
                await conn.execute(
                    select(
                        pt.rm_members.c.space_id,
                        pt.rm_members.c.participant_id,
                        pt.rm_members.c.standing,
                        pt.rm_participants.c.kind,
                        pt.rm_participants.c.owner_id,
                    )
                    .select_from(
                        pt.rm_members.outerjoin(
                            pt.rm_participants,
                            pt.rm_members.c.participant_id == pt.rm_participants.c.id,
                        )
                    )
                    .where(
                        and_(
                            pt.rm_members.c.space_id.in_(ids),
                            pt.rm_members.c.standing != "agents",
                        )
                    )
                    .order_by(pt.rm_members.c.since_seq, pt.rm_members.c.participant_id)
                )
            ).all()
            if ids
            else []
        )
    rows_of: dict[str, list[Any]] = {}
    for m in members:
        rows_of.setdefault(m.space_id, []).append(m)
    # A harness with its agents in a room is shown as them (docs/adr/0070, 0096).
    by_space: dict[str, list[typed.SpaceMember]] = {
        space_id: [
            {"participant_id": m.participant_id, "standing": m.standing}
            for m in shown_in_room(rows)
        ]
        for space_id, rows in rows_of.items()
    }
    answer: typed.SpaceList = {
        "as_of_seq": as_of,
        "archived_count": archived_count,
        "spaces": [
            {**rooms.space_fields(s, roots.get(s["id"])), "members": by_space.get(s["id"], [])}
            for s in spaces
        ],
    }
    return await rooms.as_seen(ctx, caller, answer)
