"""Wiring of the eventlog: Postgres, NATS, streams, the append loop, health."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from sqlalchemy import text

from chips_common.db.engine import build_direct, build_engine
from chips_common.nats.connect import build_nats, jetstream
from chips_common.nats.streams import Names, declare_streams
from chips_common.otel import setup_tracing
from chips_common.service.health import build_health_app
from chips_common.service.runner import serve_with_health
from chips_eventlog.config import EventlogSettings
from chips_eventlog.consumer import Appender

log = logging.getLogger(__name__)


async def run(settings: EventlogSettings) -> None:
    provider = setup_tracing("eventlog")
    # A transaction left open by a process that stopped (SIGSTOP, a hung loop) must not
    # hold its row locks past the lease's life (docs/adr/0022).
    idle_ms = max(1000, int(settings.lease_ttl_seconds * 1000))
    engine = build_engine(
        settings, connect_args={"options": f"-c idle_in_transaction_session_timeout={idle_ms}"}
    )
    # A batch decided from memory is one statement, guarded by the head row and the lease
    # (docs/adr/0105): on connections without BEGIN/COMMIT and without a pre-ping round
    # trip (a dead connection is tried once more; the guard makes the second try safe),
    # on psycopg itself, without SQLAlchemy's layers (docs/adr/0120).
    direct = build_direct(settings, size=settings.append_partitions)
    # The outbox's deletions, which need not wait for the disk (docs/adr/0024), each one
    # statement on a session that never waits for it.
    outbox_engine = build_engine(
        settings,
        pool_size=1,
        pre_ping=False,
        autocommit=True,
        connect_args={"options": "-c synchronous_commit=off"},
    )
    nc = await build_nats(settings, name="chips-eventlog")
    js = jetstream(nc)
    names = Names.from_settings(settings)
    await declare_streams(js, names)

    async def db_ok() -> bool:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        return True

    async def nats_ok() -> bool:
        return bool(nc.is_connected)

    appender = Appender(
        engine,
        nc,
        js,
        names,
        max_deliver=settings.append_max_deliver,
        request_cap=settings.request_cap(),
        delivery_cap=settings.append_delivery_cap_seconds,
        ask_wait=timedelta(seconds=settings.agent_ask_wait_seconds),
        outbox_engine=outbox_engine,
        direct=direct,
        confirm_cap=settings.principals_confirm_seconds,
    )

    async def work(stop: asyncio.Event) -> None:
        log.info("eventlog appending from %s partitions", names.partitions)
        await appender.run(
            stop,
            settings.batch_size,
            settings.outbox_sweep_seconds,
            settings.append_ack_wait_seconds,
            settings.lease_check_seconds,
            settings.lease_ttl_seconds,
        )

    try:
        await serve_with_health(
            build_health_app({"postgres": db_ok, "nats": nats_ok}),
            settings.host,
            settings.port,
            work,
        )
    finally:
        await nc.drain()
        await engine.dispose()
        await outbox_engine.dispose()
        await direct.close()
        provider.shutdown()
