"""Wiring of the referee service: the library's worker (NATS, Postgres, health, one events
consumer), its appender, and its clocks."""

from __future__ import annotations

import asyncio

from chips_common.db.engine import build_direct
from chips_common.service.health import build_health_app
from chips_common.service.worker import Worker
from chips_referee.appender import Appender
from chips_referee.config import RefereeSettings
from chips_referee.consumer import (
    WANTED,
    Memory,
    build_handler,
    build_tick,
    may_wait,
    run_clocks,
)
from chips_referee.give import build_give_tick
from chips_referee.questions import build_expiry_tick
from chips_referee.rooms import Clock


async def run(settings: RefereeSettings) -> None:
    # No ping as a connection leaves the pool: the handler sends its work again on a new
    # connection when the first statement finds its connection dead (consumer.py).
    async with Worker.wired(settings, "referee", pool_size=4, pre_ping=False) as worker:
        # The handler's common case on psycopg itself (docs/adr/0120); it handles one
        # workspace at a time.
        direct = build_direct(settings, size=2)
        worker.stack.push_async_callback(direct.close)
        appender = Appender(worker.nc, worker.names, settings.append_timeout_seconds)
        await worker.start_appender(appender)
        engine = worker.engine
        clock = Clock(quiet=settings.lead_handoff_seconds, silent=settings.turn_silent_seconds)
        memory = Memory()
        handler = build_handler(engine, appender, clock, memory, direct)
        tick = build_tick(engine, appender, clock, memory)
        expiry_tick = build_expiry_tick(engine, appender)
        give_tick = build_give_tick(engine, appender)

        async def work(stop: asyncio.Event) -> None:
            await asyncio.gather(
                # A person's post is folded with the next event, or a second later (ADR 0162).
                worker.consume(handler, stop, wanted=WANTED, may_wait=may_wait),
                # The three clocks on one look a tick (docs/adr/0166).
                run_clocks(direct, tick, expiry_tick, give_tick, settings.clock_seconds, stop),
            )

        await worker.serve(build_health_app(worker.checks()), work)
