"""Wiring of the search service: the events consumer that keeps the index, and its health.

``/readyz`` says what the service has built: the index's text search configuration, how
many workspaces and rows it holds, and how many logged events it has still to fold in
(``behind``). It is ready once Postgres and NATS answer and the index's schema is there.
GET /v1/search itself is served by the gateway, from these tables (docs/adr/0027).
"""

from __future__ import annotations

import asyncio

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.db.engine import build_direct
from chips_common.db.search_tables import TEXT_SEARCH_CONFIG
from chips_common.events import JsonObject
from chips_common.service.consumer import BatchHandler
from chips_common.service.health import About, Check
from chips_common.service.worker import run_worker
from chips_search.config import SearchSettings
from chips_search.consumer import build_handler, may_wait, sweep

BUILDS = "full-text index of messages and run steps (Postgres tsvector + GIN)"


def build_checks(engine: AsyncEngine) -> dict[str, Check]:
    async def index_ok() -> bool:
        async with engine.connect() as conn:
            found = await conn.execute(
                text(
                    "SELECT to_regclass('search_docs') IS NOT NULL"
                    " AND EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = :config)"
                ),
                {"config": TEXT_SEARCH_CONFIG},
            )
            return bool(found.scalar())

    return {"index": index_ok}


def build_about(engine: AsyncEngine) -> About:
    async def about() -> JsonObject:
        async with engine.connect() as conn:
            row = (
                await conn.execute(
                    text(
                        "SELECT count(*) AS workspaces,"
                        " coalesce(sum(w.head_seq - coalesce(c.seq, 0)), 0) AS behind"
                        " FROM workspaces w"
                        " LEFT JOIN search_checkpoints c ON c.workspace_id = w.id"
                    )
                )
            ).one()
            # The planner's count: exact enough to say how big the index is, and free. The
            # table is partitioned (docs/adr/0051): its partitions hold the rows.
            rows = (
                await conn.execute(
                    text(
                        "SELECT coalesce(sum(greatest(c.reltuples, 0)), 0)::bigint"
                        " FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
                        " WHERE i.inhparent = 'search_docs'::regclass"
                    )
                )
            ).scalar()
        return {
            "builds": BUILDS,
            "serves": "nothing over HTTP: the gateway answers GET /v1/search from the index",
            "text_search_config": TEXT_SEARCH_CONFIG,
            "workspaces": int(row.workspaces),
            "rows_estimate": int(rows or 0),
            "behind": int(row.behind),
        }

    return about


# Commits that do not wait for the disk: the index is derived from the log and its
# checkpoint commits with its rows, so what a crash of Postgres loses is folded again from
# the log (docs/adr/0067). The engine's sessions and Direct's alike.
SERVER_OPTIONS = "-c synchronous_commit=off"


async def run(settings: SearchSettings) -> None:
    # The two statements of every batch of posts go on psycopg itself (docs/adr/0120): one
    # connection for the consumer, one for the sweep, which runs beside it.
    direct = build_direct(settings, size=2, options=SERVER_OPTIONS)

    def handler(engine: AsyncEngine) -> BatchHandler:
        return build_handler(engine, direct)

    async def sweeping(engine: AsyncEngine, stop: asyncio.Event) -> None:
        await sweep(engine, stop, settings.search_sweep_seconds, direct)

    try:
        await run_worker(
            settings,
            "search",
            None,
            build_batch_handler=handler,
            checks=build_checks,
            about=build_about,
            beside=sweeping,
            # No connection check on the way out of the pool (a batch whose connection was
            # dead goes once more on a new one).
            engine_options={"pre_ping": False, "connect_args": {"options": SERVER_OPTIONS}},
            # Every event is folded with others, a moment later: a search waits for the
            # log's head and asks for its workspace at once (docs/adr/0168).
            may_wait=may_wait,
            wait=settings.consumer_hold_seconds,
            pace=settings.consumer_hold_seconds,
        )
    finally:
        await direct.close()
