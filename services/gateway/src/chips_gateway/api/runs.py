"""Reading runs: a run with its steps and lanes as a receipt, a room's runs and lanes,
approvals waiting.

Read from the projector's read models (``chips_common.db.run_tables``), scoped by who is
in the room now (the door state), like every room read. A run in a room the caller is not
in is ``not_found``, so a refusal tells a stranger nothing; a room's list for a stranger
is ``forbidden``, as the room's other reads are.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query
from sqlalchemy import and_, func, or_, select

from chips_common.db import projector_tables as pt
from chips_gateway import rows
from chips_gateway.agents import shown
from chips_gateway.api.reads import checkpoint, wait_for_checkpoint
from chips_gateway.context import Caller, Ctx
from chips_gateway.edge import MAX_INT
from chips_gateway.errors import ChipsError
from chips_gateway.guard import (
    require_harness_or_owner,
    require_member,
    spaces_and_threads_of,
)

router = APIRouter(prefix="/v1")


async def as_of(ctx: Ctx, workspace_id: str, after_seq: int | None) -> int:
    if after_seq is None:
        return await checkpoint(ctx, workspace_id)
    return await wait_for_checkpoint(ctx, workspace_id, after_seq)


def run_row(row: Any) -> rows.RunRow:
    return {
        "run_id": row.id,
        "space_id": row.space_id,
        "harness_id": row.harness_id,
        # The agent whose turn it is, when an agent's (docs/adr/0075); null for the harness.
        "agent_id": row.agent_id,
        "goal": row.goal,
        "session_id": row.session_id,
        "message_id": row.message_id,
        "chips": row.chips,
        "state": row.state,
        "status": {
            "phase": row.phase,
            "verb": row.verb,
            "progress": row.progress,
            "text": row.status_text,
        },
        "summary": row.summary,
        "why": row.why,
        "started_seq": row.started_seq,
        "started_at": row.started_at.isoformat(),
        "ended_seq": row.ended_seq,
        "ended_at": row.ended_at.isoformat() if row.ended_at else None,
        "usage": {
            "tokens_in": row.tokens_in,
            "tokens_out": row.tokens_out,
            "cost_usd": round(row.cost_usd, 6),
            "uncosted": row.uncosted,
        },
    }


def card_row(row: Any) -> rows.RunCard:
    body = dict(row.body)
    return {
        "kind": row.kind,
        "id": row.id,
        "run_id": row.run_id,
        "space_id": row.space_id,
        "harness_id": row.harness_id,
        "asked_seq": row.asked_seq,
        "expires_at": row.expires_at.isoformat() if row.expires_at else None,
        "card": {k: v for k, v in body.items() if k not in ("id", "seq", "actor", "ts", "type")},
        "answered_by": row.answered_by,
        "answer": row.answer,
        "answered_seq": row.answered_seq,
    }


def said_row(row: Any) -> rows.RunMessage:
    """A message said on a run, as the run's receipt lists it; a taken-back one has no words."""
    return {
        "message_id": row.id,
        "seq": row.seq,
        "author_id": row.author_id,
        "kind": row.kind,
        "text": None if row.deleted else row.text,
        "ts": row.ts.isoformat(),
        "edited": row.edited,
        "deleted": row.deleted,
    }


def lane_row(row: Any, space_id: str | None = None) -> rows.Lane:
    """A lane as its route card shows it; ``direction`` is ``out`` of the room it was read
    from, or ``in`` to it (ADR 0017)."""
    lane: rows.Lane = {
        "lane_id": row.id,
        "run_id": row.run_id,
        "from_space_id": row.from_space_id,
        "to_space_id": row.to_space_id,
        "opener_id": row.opener_id,
        "task": row.task,
        "worker": row.worker,
        "working_run_id": row.working_run_id,
        "state": row.state,
        "summary": row.summary,
        "why": row.why,
        "cost_usd": row.cost_usd,
        "ended_by": row.ended_by,
        "opened_seq": row.opened_seq,
        "opened_at": row.opened_at.isoformat(),
        "ended_seq": row.ended_seq,
        "ended_at": row.ended_at.isoformat() if row.ended_at else None,
    }
    if space_id is not None:
        lane["direction"] = "out" if row.from_space_id == space_id else "in"
    return lane


@router.get("/runs/{run_id}", response_model=None)
async def read_run(
    run_id: str,
    ctx: Ctx,
    caller: Caller,
    after_seq: Annotated[int | None, Query(ge=0, le=MAX_INT)] = None,
) -> rows.Run:
    """A run as its receipt: the run, its steps in order, and its cards."""
    ws_id = caller.workspace_id
    seq = await as_of(ctx, ws_id, after_seq)
    r, s, c = pt.rm_runs, pt.rm_steps, pt.rm_cards
    async with ctx.engine.connect() as conn:
        run = (
            await conn.execute(select(r).where(and_(r.c.workspace_id == ws_id, r.c.id == run_id)))
        ).first()
        if run is None or not await ctx.reader.is_member(run.space_id, caller.participant_id):
            raise ChipsError("not_found", f"no run {run_id} in a room of yours")
        steps = await conn.execute(
            select(s)
            .where(and_(s.c.workspace_id == ws_id, s.c.run_id == run_id))
            .order_by(s.c.started_seq)
        )
        cards = await conn.execute(
            select(c)
            .where(and_(c.c.workspace_id == ws_id, c.c.run_id == run_id))
            .order_by(c.c.asked_seq)
        )
        ln = pt.rm_lanes
        lanes = await conn.execute(
            select(ln)
            .where(and_(ln.c.workspace_id == ws_id, ln.c.run_id == run_id))
            .order_by(ln.c.opened_seq)
        )
        works = (
            await conn.execute(
                select(ln.c.id).where(
                    and_(ln.c.workspace_id == ws_id, ln.c.working_run_id == run_id)
                )
            )
        ).scalar()
        m = pt.rm_messages
        said = await conn.execute(
            select(m).where(and_(m.c.workspace_id == ws_id, m.c.run_id == run_id)).order_by(m.c.seq)
        )
        answer: rows.Run = {
            **run_row(run),
            "lane_id": works,
            "steps": [
                {
                    "step_id": step.step_id,
                    "status": step.status,
                    "title": step.title,
                    "summary": step.summary,
                    "started_seq": step.started_seq,
                    "last_seq": step.last_seq,
                }
                for step in steps
            ],
            "cards": [card_row(card) for card in cards],
            "lanes": [lane_row(lane) for lane in lanes],
            # What its harness said on it, in the run's room (a reply on the run).
            "messages": [said_row(row) for row in said],
            "as_of_seq": seq,
        }
    # A harness before agents reads its agents' runs as its own (docs/adr/0079).
    return await shown(ctx.reader, caller, answer)


def usage_of(row: Any) -> rows.Spending:
    return {
        "tokens_in": row.tokens_in if row else 0,
        "tokens_out": row.tokens_out if row else 0,
        "cost_usd": round(row.cost_usd, 6) if row else 0,
        "reports": row.reports if row else 0,
        "uncosted": row.uncosted if row else 0,
    }


@router.get("/harnesses/{harness_id}/usage", response_model=None)
async def harness_usage(
    harness_id: str,
    ctx: Ctx,
    caller: Caller,
    after_seq: Annotated[int | None, Query(ge=0, le=MAX_INT)] = None,
    days: Annotated[int, Query(ge=1, le=90)] = 30,
) -> rows.HarnessUsage:
    """What a harness's runs have spent, in every room (the harness, or its owner), and day
    by day over the last ``days`` days to today (UTC), oldest first, a day with no report
    at zero: the harness's page draws it as a chart."""
    await require_harness_or_owner(ctx, caller, harness_id)
    ws_id = caller.workspace_id
    seq = await as_of(ctx, ws_id, after_seq)
    u = pt.rm_usage
    today = datetime.now(UTC).date()
    wanted = [(today - timedelta(days=n)).isoformat() for n in range(days - 1, -1, -1)]
    async with ctx.engine.connect() as conn:
        row = (
            await conn.execute(
                select(u).where(
                    and_(
                        u.c.workspace_id == ws_id,
                        u.c.scope == "harness",
                        u.c.scope_id == harness_id,
                    )
                )
            )
        ).first()
        by_day = {
            r.scope_id.rsplit("/", 1)[1]: r
            for r in await conn.execute(
                select(u).where(
                    and_(
                        u.c.workspace_id == ws_id,
                        u.c.scope == "harness_day",
                        u.c.scope_id.in_([f"{harness_id}/{day}" for day in wanted]),
                    )
                )
            )
        }
    answer: rows.HarnessUsage = {
        "harness_id": harness_id,
        "usage": usage_of(row),
        "days": [{"day": day, **usage_of(by_day.get(day))} for day in wanted],
        "as_of_seq": seq,
    }
    return await shown(ctx.reader, caller, answer)


@router.get("/spaces/{space_id}/runs", response_model=None)
async def space_runs(
    space_id: str,
    ctx: Ctx,
    caller: Caller,
    after_seq: Annotated[int | None, Query(ge=0, le=MAX_INT)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> rows.SpaceRuns:
    """A room's runs, newest first, and what the room's runs have spent."""
    await require_member(ctx, caller, space_id)
    ws_id = caller.workspace_id
    seq = await as_of(ctx, ws_id, after_seq)
    r, u = pt.rm_runs, pt.rm_usage
    async with ctx.engine.connect() as conn:
        result = await conn.execute(
            select(r)
            .where(and_(r.c.workspace_id == ws_id, r.c.space_id == space_id))
            .order_by(r.c.started_seq.desc())
            .limit(limit)
        )
        runs = [run_row(row) for row in result]
        usage = (
            await conn.execute(
                select(u).where(
                    and_(u.c.workspace_id == ws_id, u.c.scope == "space", u.c.scope_id == space_id)
                )
            )
        ).first()
    answer: rows.SpaceRuns = {"runs": runs, "usage": usage_of(usage), "as_of_seq": seq}
    return await shown(ctx.reader, caller, answer)


@router.get("/spaces/{space_id}/lanes", response_model=None)
async def space_lanes(
    space_id: str,
    ctx: Ctx,
    caller: Caller,
    after_seq: Annotated[int | None, Query(ge=0, le=MAX_INT)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> rows.SpaceLanes:
    """The lanes out of a room and into it, newest first (ADR 0017)."""
    await require_member(ctx, caller, space_id)
    ws_id = caller.workspace_id
    seq = await as_of(ctx, ws_id, after_seq)
    ln = pt.rm_lanes
    async with ctx.engine.connect() as conn:
        result = await conn.execute(
            select(ln)
            .where(
                and_(
                    ln.c.workspace_id == ws_id,
                    or_(ln.c.from_space_id == space_id, ln.c.to_space_id == space_id),
                )
            )
            .order_by(ln.c.opened_seq.desc())
            .limit(limit)
        )
        lanes = [lane_row(row, space_id) for row in result]
    answer: rows.SpaceLanes = {"lanes": lanes, "as_of_seq": seq}
    return await shown(ctx.reader, caller, answer)


@router.get("/approvals", response_model=None)
async def approvals(
    ctx: Ctx,
    caller: Caller,
    waiting: bool = True,
    after_seq: Annotated[int | None, Query(ge=0, le=MAX_INT)] = None,
) -> rows.Approvals:
    """Approvals in the caller's rooms and their threads; ``waiting`` (the default) only
    those still open: nobody decided, not expired, and the run that asked still live."""
    ws_id = caller.workspace_id
    seq = await as_of(ctx, ws_id, after_seq)
    c, r = pt.rm_cards, pt.rm_runs
    mine = spaces_and_threads_of(caller.participant_id, ws_id)
    query = (
        select(c)
        .select_from(c.join(r, and_(r.c.workspace_id == c.c.workspace_id, r.c.id == c.c.run_id)))
        .where(and_(c.c.workspace_id == ws_id, c.c.kind == "approval", c.c.space_id.in_(mine)))
        .order_by(c.c.asked_seq)
    )
    if waiting:
        query = query.where(
            and_(
                c.c.answered_seq.is_(None),
                r.c.state.in_(("running", "paused")),
                or_(c.c.expires_at.is_(None), c.c.expires_at > func.now()),
            )
        )
    async with ctx.engine.connect() as conn:
        result = await conn.execute(query)
        cards = [card_row(row) for row in result]
    answer: rows.Approvals = {"approvals": cards, "as_of_seq": seq}
    return await shown(ctx.reader, caller, answer)
