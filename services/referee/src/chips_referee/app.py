"""Wiring of the referee service: NATS, Postgres, its appender, one events consumer."""

from __future__ import annotations

import asyncio

from sqlalchemy import text

from chips_common.db.engine import build_direct, build_engine
from chips_common.nats.connect import build_nats, jetstream
from chips_common.nats.streams import Names, declare_streams
from chips_common.otel import setup_tracing
from chips_common.service.consumer import consume_events
from chips_common.service.health import build_health_app
from chips_common.service.poison import Limits
from chips_common.service.runner import serve_with_health
from chips_referee.appender import Appender
from chips_referee.config import RefereeSettings
from chips_referee.consumer import WANTED, Memory, build_handler, build_tick, run_clock
from chips_referee.give import build_give_tick
from chips_referee.questions import build_expiry_tick
from chips_referee.rooms import Clock


async def run(settings: RefereeSettings) -> None:
    provider = setup_tracing("referee")
    # No ping as a connection leaves the pool: the handler sends its work again on a new
    # connection when the first statement finds its connection dead (consumer.py).
    engine = build_engine(settings, pool_size=4, pre_ping=False)
    # The handler's common case on psycopg itself (docs/adr/0120); it handles one
    # workspace at a time.
    direct = build_direct(settings, size=2)
    nc = await build_nats(settings, name="chips-referee")
    js = jetstream(nc)
    names = Names.from_settings(settings)
    await declare_streams(js, names)
    appender = Appender(nc, names, settings.append_timeout_seconds)
    await appender.start()
    clock = Clock(quiet=settings.lead_handoff_seconds, silent=settings.turn_silent_seconds)
    memory = Memory()
    handler = build_handler(engine, appender, clock, memory, direct)
    tick = build_tick(engine, appender, clock, memory)
    expiry_tick = build_expiry_tick(engine, appender)
    give_tick = build_give_tick(engine, appender)

    async def db_ok() -> bool:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        return True

    async def nats_ok() -> bool:
        return bool(nc.is_connected)

    async def work(stop: asyncio.Event) -> None:
        await asyncio.gather(
            consume_events(
                nc,
                js,
                names,
                "referee",
                handler,
                stop,
                wanted=WANTED,
                limits=Limits.from_settings(settings),
            ),
            run_clock(tick, settings.clock_seconds, stop),
            run_clock(expiry_tick, settings.clock_seconds, stop),
            run_clock(give_tick, settings.clock_seconds, stop),
        )

    try:
        await serve_with_health(
            build_health_app({"postgres": db_ok, "nats": nats_ok}),
            settings.host,
            settings.port,
            work,
        )
    finally:
        await appender.stop()
        await nc.drain()
        await direct.close()
        await engine.dispose()
        provider.shutdown()
