"""The read models of runs: ``rm_runs``, ``rm_steps``, ``rm_cards``, ``rm_usage``, ``rm_lanes``.

One ``apply_*`` per event type of ``chips_common.events.runs`` and ``.lanes``, each a pure
function of the log like every other (docs/architecture/design.md §5). Usage is kept per run (on
``rm_runs``), per space and per harness (``rm_usage``), for the spend work that follows.
A lane is folded from the copy of each event at home, in the room it went to (ADR 0017).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import and_, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db import projector_tables as pt
from chips_common.events.wire import EventJson
from chips_projector.rules import (
    answer_of,
    at_home,
    card_kind,
    harness_of,
    lane_end_changes,
    run_state_changes,
    step_replaces,
    ts_of,
    usage_of,
    usage_scopes,
)

Apply = Callable[[AsyncConnection, EventJson], Awaitable[None]]


def this_run(event: EventJson) -> Any:
    c = pt.rm_runs.c
    return and_(c.workspace_id == event["workspace_id"], c.id == event["run_id"])


async def apply_run_started(conn: AsyncConnection, event: EventJson) -> None:
    if event.get("lane_id"):  # a job taking over the lane it works (ADR 0017)
        await conn.execute(
            update(pt.rm_lanes).where(this_lane(event)).values(working_run_id=event["run_id"])
        )
    await conn.execute(
        insert(pt.rm_runs).values(
            id=event["run_id"],
            workspace_id=event["workspace_id"],
            space_id=event["space_id"],
            harness_id=harness_of(event),
            agent_id=event["actor"]["id"] if event["actor"]["kind"] == "agent" else None,
            goal=event["goal"],
            session_id=event.get("session_id"),
            message_id=event.get("message_id"),
            chips=bool(event.get("chips")),
            state="running",
            started_seq=event["seq"],
            started_at=ts_of(event),
        )
    )


async def apply_run_status(conn: AsyncConnection, event: EventJson) -> None:
    await conn.execute(
        update(pt.rm_runs)
        .where(this_run(event))
        .values(
            phase=event.get("phase"),
            verb=event.get("verb"),
            progress=event.get("progress"),
            status_text=event.get("text"),
        )
    )


async def apply_state(conn: AsyncConnection, event: EventJson) -> None:
    await conn.execute(update(pt.rm_runs).where(this_run(event)).values(**run_state_changes(event)))


async def apply_step_log(conn: AsyncConnection, event: EventJson) -> None:
    stmt = pg_insert(pt.rm_steps).values(
        workspace_id=event["workspace_id"],
        run_id=event["run_id"],
        step_id=event["step_id"],
        status=event["status"],
        title=event.get("title"),
        summary=event.get("summary"),
        started_seq=event["seq"],
        last_seq=event["seq"],
    )
    # A step is reported again as it moves on; what it says now replaces what it said.
    changes = {name: stmt.excluded[name] for name in step_replaces(event)}
    await conn.execute(
        stmt.on_conflict_do_update(
            index_elements=["workspace_id", "run_id", "step_id"], set_=changes
        )
    )


async def apply_usage(conn: AsyncConnection, event: EventJson) -> None:
    counts = usage_of(event)
    tokens_in, tokens_out = counts["tokens_in"], counts["tokens_out"]
    cost, uncosted = counts["cost_usd"], counts["uncosted"]
    r = pt.rm_runs.c
    await conn.execute(
        update(pt.rm_runs)
        .where(this_run(event))
        .values(
            tokens_in=r.tokens_in + tokens_in,
            tokens_out=r.tokens_out + tokens_out,
            cost_usd=r.cost_usd + cost,
            uncosted=r.uncosted + uncosted,
        )
    )
    room = select(pt.rm_spaces.c.id).where(pt.rm_spaces.c.id == event["space_id"])
    stands = (await conn.execute(room)).first() is not None  # not a room erased since
    for scope, scope_id in usage_scopes(event, stands):
        stmt = pg_insert(pt.rm_usage).values(
            workspace_id=event["workspace_id"],
            scope=scope,
            scope_id=scope_id,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cost_usd=cost,
            reports=1,
            uncosted=uncosted,
        )
        u = pt.rm_usage.c
        await conn.execute(
            stmt.on_conflict_do_update(
                index_elements=["workspace_id", "scope", "scope_id"],
                set_={
                    "tokens_in": u.tokens_in + tokens_in,
                    "tokens_out": u.tokens_out + tokens_out,
                    "cost_usd": u.cost_usd + cost,
                    "reports": u.reports + 1,
                    "uncosted": u.uncosted + uncosted,
                },
            )
        )


async def apply_card(conn: AsyncConnection, event: EventJson) -> None:
    kind = card_kind(event)
    expires = event.get("expires_at")
    fields: Mapping[str, object] = event
    await conn.execute(
        insert(pt.rm_cards).values(
            workspace_id=event["workspace_id"],
            kind=kind,
            id=fields[f"{kind}_id"],
            run_id=event["run_id"],
            space_id=event["space_id"],
            harness_id=harness_of(event),
            body={k: v for k, v in event.items() if k not in ("v", "workspace_id")},
            expires_at=datetime.fromisoformat(expires.replace("Z", "+00:00")) if expires else None,
            asked_seq=event["seq"],
        )
    )


async def apply_answer(conn: AsyncConnection, event: EventJson) -> None:
    kind = card_kind(event)
    fields: Mapping[str, object] = event
    c = pt.rm_cards.c
    await conn.execute(
        update(pt.rm_cards)
        .where(
            and_(
                c.workspace_id == event["workspace_id"],
                c.kind == kind,
                c.id == fields[f"{kind}_id"],
            )
        )
        .values(
            answered_by=event["actor"]["id"], answer=answer_of(event), answered_seq=event["seq"]
        )
    )


def this_lane(event: EventJson) -> Any:
    c = pt.rm_lanes.c
    return and_(c.workspace_id == event["workspace_id"], c.id == event["lane_id"])


async def apply_lane_opened(conn: AsyncConnection, event: EventJson) -> None:
    if not at_home(event):
        return
    await conn.execute(
        insert(pt.rm_lanes).values(
            workspace_id=event["workspace_id"],
            id=event["lane_id"],
            run_id=event.get("run_id"),
            from_space_id=event["from_space_id"],
            to_space_id=event["to_space_id"],
            opener_id=event["actor"]["id"],
            task=event["task"],
            worker=event.get("worker"),
            state="open",
            opened_seq=event["seq"],
            opened_at=ts_of(event),
        )
    )


async def apply_lane_ended(conn: AsyncConnection, event: EventJson) -> None:
    if not at_home(event):
        return
    await conn.execute(
        update(pt.rm_lanes).where(this_lane(event)).values(**lane_end_changes(event))
    )


RUN_APPLY: dict[str, Apply] = {
    "lane.opened": apply_lane_opened,
    "lane.completed": apply_lane_ended,
    "lane.failed": apply_lane_ended,
    "lane.cancelled": apply_lane_ended,
    "run.started": apply_run_started,
    "run.status": apply_run_status,
    "run.paused": apply_state,
    "run.resumed": apply_state,
    "run.completed": apply_state,
    "run.failed": apply_state,
    "run.cancel": apply_state,
    "step.log": apply_step_log,
    "usage": apply_usage,
    "approval.request": apply_card,
    "question.ask": apply_card,
    "approval.resolved": apply_answer,
    "question.answered": apply_answer,
    "question.expired": apply_answer,
}
