"""A room's job and its spend, read from the log (rules/spend.py; docs/adr/0083).

The gateway (``GET /v1/spaces/:id/spend``, ``context.spend``) and the referee (its warnings)
read a job the same way, as of a seq: the room's ceiling is the last
``space.spend_ceiling_set`` up to it, the job began at the last thing a person did in the
room (or the room's creation), and its spend is the room's ``usage`` since then. Everything
it needs is in ``events``, under its ``(workspace_id, space_id, seq)`` index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NotRequired, TypedDict

from pydantic import JsonValue
from sqlalchemy import and_, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db import tables as t
from chips_common.events.wire import EventJson, canonical_event
from chips_common.rules.spend import (
    Job,
    SpendFacts,
    add_usage,
    ceiling_of,
    new_job,
    spend_facts,
)

# A person's participant id begins so (docs/architecture/design.md §7); their acts start a job.
PERSON_PREFIX = "usr_"
# How many held posts a person's act is read to hand on, newest first.
HELD_READ = 200


@dataclass(frozen=True)
class JobRead:
    job: Job
    ceiling_usd: float

    def facts(self) -> SpendFacts:
        return spend_facts(self.job, self.ceiling_usd)


async def read_job(
    conn: AsyncConnection, workspace_id: str, space_id: str, upto: int | None = None
) -> JobRead:
    """The room's job as of ``upto`` (the head when None)."""
    e = t.events.c
    room = [e.workspace_id == workspace_id, e.space_id == space_id]
    if upto is not None:
        room.append(e.seq <= upto)
    ceiling_row = (
        await conn.execute(
            select(e.body)
            .where(and_(*room, e.type == "space.spend_ceiling_set"))
            .order_by(e.seq.desc())
            .limit(1)
        )
    ).first()
    usd = ceiling_row.body.get("usd") if ceiling_row is not None else None
    started = (
        await conn.execute(
            select(e.seq)
            .where(and_(*room, e.actor_id.startswith(PERSON_PREFIX)))
            .order_by(e.seq.desc())
            .limit(1)
        )
    ).scalar()
    if started is None:  # nobody has acted here yet: the job began with the room
        started = (
            await conn.execute(select(e.seq).where(and_(*room)).order_by(e.seq).limit(1))
        ).scalar() or 0
    job = new_job(started)
    usages = await conn.execute(
        select(e.body).where(and_(*room, e.seq > started, e.type == "usage")).order_by(e.seq)
    )
    for row in usages:
        job = add_usage(job, str(row.body.get("run_id")), row.body.get("cost_usd"))
    return JobRead(job, ceiling_of(usd))


async def held_since_last_person(
    conn: AsyncConnection, workspace_id: str, space_id: str, seq: int
) -> list[EventJson]:
    """The room's held posts between the last person's act before ``seq`` and ``seq``,
    newest first: what a person's act at ``seq`` hands back (docs/adr/0083)."""
    e = t.events.c
    room = [e.workspace_id == workspace_id, e.space_id == space_id, e.seq < seq]
    before = (
        select(func.coalesce(func.max(e.seq), 0))
        .where(and_(*room, e.actor_id.startswith(PERSON_PREFIX)))
        .scalar_subquery()
    )
    rows = await conn.execute(
        select(e.body)
        .where(
            and_(
                *room,
                e.seq > before,
                e.type == "message.post",
                e.body["held"].as_boolean().is_(True),
            )
        )
        .order_by(e.seq.desc())
        .limit(HELD_READ)
    )
    return [canonical_event(row.body) for row in rows]


class Pause(TypedDict):
    """Why a room's agents are paused, by whom, since which seq."""

    why: Literal["spend", "person"]
    by: str
    seq: int
    at: str
    spend: NotRequired[JsonValue]  # the spend the pause at the ceiling saw


async def read_pause(conn: AsyncConnection, workspace_id: str, space_id: str) -> Pause | None:
    """Whether the room's agents are paused now, and by whom (docs/adr/0100): what the
    people's banner says when the room is opened.

    The same rule as the door's fold (``rules.exchanges.step``): ``exchange.set`` running
    ends any pause; a person's pause lasts until then; Chips's pause at the ceiling ends at
    the next thing a person does in the room. None when the room is not paused.
    """
    e = t.events.c
    room = [e.workspace_id == workspace_id, e.space_id == space_id, e.type == "exchange.set"]
    resumed = (
        await conn.execute(
            select(func.coalesce(func.max(e.seq), 0)).where(
                and_(*room, e.body["state"].astext == "running")
            )
        )
    ).scalar() or 0
    found = (
        await conn.execute(
            select(e.seq, e.ts, e.actor_id, e.body)
            .where(and_(*room, e.seq > resumed, e.body["state"].astext == "paused"))
            .order_by(e.seq.desc())
            .limit(50)
        )
    ).all()
    if not found:
        return None
    by_person = [row for row in found if row.body.get("why") != "spend"]
    row = by_person[0] if by_person else found[0]
    if not by_person:
        acted = (
            await conn.execute(
                select(e.seq)
                .where(
                    and_(
                        e.workspace_id == workspace_id,
                        e.space_id == space_id,
                        e.seq > row.seq,
                        e.actor_id.startswith(PERSON_PREFIX),
                    )
                )
                .limit(1)
            )
        ).first()
        if acted is not None:  # a person's act began a new job: the spend pause is over
            return None
    pause: Pause = {
        "why": "spend" if row.body.get("why") == "spend" else "person",
        "by": row.actor_id,
        "seq": int(row.seq),
        "at": row.ts.isoformat(),
    }
    if row.body.get("spend") is not None:
        pause["spend"] = row.body["spend"]
    return pause
