"""A worker service: NATS, Postgres, health, and one events consumer."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.config import Settings
from chips_common.db.engine import build_engine
from chips_common.nats.connect import build_nats, jetstream
from chips_common.nats.streams import Names, declare_streams
from chips_common.otel import setup_tracing
from chips_common.service.consumer import (
    BatchHandler,
    Handler,
    consume_batches,
    consume_events,
)
from chips_common.service.health import BUILT, About, Check, build_health_app
from chips_common.service.poison import Limits
from chips_common.service.runner import serve_with_health

log = logging.getLogger(__name__)


async def run_worker(
    settings: Settings,
    service: str,
    build_handler: Callable[[AsyncEngine], Handler] | None,
    work_done: str = BUILT,
    *,
    build_batch_handler: Callable[[AsyncEngine], BatchHandler] | None = None,
    checks: Callable[[AsyncEngine], dict[str, Check]] | None = None,
    about: Callable[[AsyncEngine], About] | None = None,
    beside: Callable[[AsyncEngine, asyncio.Event], Awaitable[None]] | None = None,
    engine_options: dict[str, Any] | None = None,
) -> None:
    """Connect, declare the streams, and consume ``CHIPS_EVENTS`` until stopped.

    ``work_done`` is what the health answers say of the service's job: ``not_built(…)`` while
    it is still to come (see :mod:`chips_common.service.health`). ``checks`` adds readiness
    checks of the service's own, and ``about`` what it says on ``/readyz`` of what it has
    built; each is given the engine. ``beside`` is more work run alongside the consumer
    until the same stop. ``build_batch_handler``, instead of ``build_handler``: a handler
    of each fetched batch's workspaces together (``consume_batches``). ``engine_options``
    are ``build_engine``'s.
    """
    provider = setup_tracing(service)
    engine = build_engine(settings, **{"pool_size": 4, **(engine_options or {})})
    nc = await build_nats(settings, name=f"chips-{service}")
    js = jetstream(nc)
    names = Names.from_settings(settings)
    await declare_streams(js, names)
    limits = Limits.from_settings(settings)
    consume: Callable[[asyncio.Event], Awaitable[None]]
    if build_batch_handler is not None:
        batch_handler = build_batch_handler(engine)

        async def consume(stop: asyncio.Event) -> None:
            await consume_batches(nc, js, names, service, batch_handler, stop, limits=limits)
    else:
        assert build_handler is not None, "a worker needs a handler"
        handler = build_handler(engine)

        async def consume(stop: asyncio.Event) -> None:
            await consume_events(nc, js, names, service, handler, stop, limits=limits)

    async def db_ok() -> bool:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        return True

    async def nats_ok() -> bool:
        return bool(nc.is_connected)

    async def work(stop: asyncio.Event) -> None:
        if beside is None:
            await consume(stop)
            return
        await asyncio.gather(consume(stop), beside(engine, stop))

    try:
        await serve_with_health(
            build_health_app(
                {"postgres": db_ok, "nats": nats_ok, **(checks(engine) if checks else {})},
                work_done,
                about(engine) if about else None,
            ),
            settings.host,
            settings.port,
            work,
        )
    finally:
        await nc.drain()
        await engine.dispose()
        provider.shutdown()
