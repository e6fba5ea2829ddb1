"""Space lists, read from the projector's read models."""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any

from fastapi import APIRouter, Query
from sqlalchemy import and_, select

from chips_common.db import tables as t
from chips_gateway.context import Caller, Ctx

router = APIRouter(prefix="/v1")


async def checkpoint(ctx: Ctx, workspace_id: str) -> int:
    async with ctx.engine.connect() as conn:
        seq = (
            await conn.execute(
                select(t.projector_checkpoints.c.seq).where(
                    t.projector_checkpoints.c.workspace_id == workspace_id
                )
            )
        ).scalar()
    return int(seq or 0)


async def wait_for_checkpoint(ctx: Ctx, workspace_id: str, after_seq: int) -> int:
    """Read-your-writes: wait (a bounded while) until the projector has applied after_seq."""
    deadline = time.monotonic() + ctx.settings.read_your_writes_timeout_seconds
    seq = await checkpoint(ctx, workspace_id)
    while seq < after_seq and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        seq = await checkpoint(ctx, workspace_id)
    return seq


@router.get("/spaces")
async def list_spaces(
    ctx: Ctx, caller: Caller, after_seq: Annotated[int | None, Query(ge=0)] = None
) -> dict[str, Any]:
    """The caller's spaces, newest activity first, with their members."""
    ws_id = caller.workspace_id
    as_of = (
        await wait_for_checkpoint(ctx, ws_id, after_seq)
        if after_seq is not None
        else await checkpoint(ctx, ws_id)
    )
    mine = select(t.rm_members.c.space_id).where(
        and_(
            t.rm_members.c.workspace_id == ws_id,
            t.rm_members.c.participant_id == caller.participant_id,
        )
    )
    async with ctx.engine.connect() as conn:
        spaces = (
            (
                await conn.execute(
                    select(t.rm_spaces)
                    .where(t.rm_spaces.c.id.in_(mine))
                    .order_by(t.rm_spaces.c.last_seq.desc())
                )
            )
            .mappings()
            .all()
        )
        ids = [s["id"] for s in spaces]
        members = (
            (
                await conn.execute(
                    select(
                        t.rm_members.c.space_id,
                        t.rm_members.c.participant_id,
                        t.rm_members.c.standing,
                    )
                    .where(t.rm_members.c.space_id.in_(ids))
                    .order_by(t.rm_members.c.since_seq)
                )
            ).all()
            if ids
            else []
        )
    by_space: dict[str, list[dict[str, str]]] = {}
    for m in members:
        by_space.setdefault(m.space_id, []).append(
            {"participant_id": m.participant_id, "standing": m.standing}
        )
    return {
        "as_of_seq": as_of,
        "spaces": [
            {
                "id": s["id"],
                "kind": s["kind"],
                "title": s["title"],
                "created_by": s["created_by"],
                "created_at": s["created_at"].isoformat(),
                "last_seq": s["last_seq"],
                "message_count": s["message_count"],
                "members": by_space.get(s["id"], []),
            }
            for s in spaces
        ],
    }
