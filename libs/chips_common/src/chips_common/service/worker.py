"""A worker service's wiring: tracing, Postgres, NATS, the streams, health, its consumer.

Every service that reads the log is wired the same way, here: :class:`Worker` opens what
it needs in order and closes it in the reverse order (NATS drained, the engine disposed,
the spans flushed), whatever stops it. A service with nothing of its own beyond a handler
calls :func:`run_worker`; one that also writes to the log (:meth:`Worker.start_appender`) or
serves an HTTP API of its own (the referee, attachments) opens a :class:`Worker` and
puts its own parts on it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Unpack

from fastapi import FastAPI
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.config import Settings
from chips_common.db.engine import EngineOptions, build_engine
from chips_common.nats.appender import Appender
from chips_common.nats.connect import build_nats, jetstream
from chips_common.nats.streams import Names, declare_streams
from chips_common.otel import setup_tracing
from chips_common.service.consumer import (
    BatchHandler,
    Handler,
    MayWait,
    Wanted,
    consume_batches,
    consume_events,
)
from chips_common.service.health import BUILT, About, Check, build_health_app
from chips_common.service.poison import Limits
from chips_common.service.runner import serve_with_health

log = logging.getLogger(__name__)


class Worker:
    """A worker service's connections, open for as long as :meth:`wired` is entered."""

    def __init__(
        self,
        settings: Settings,
        service: str,
        stack: AsyncExitStack,
        engine: AsyncEngine,
        nc: NATS,
        js: JetStreamContext,
        names: Names,
    ) -> None:
        self.settings = settings
        self.service = service
        self.stack = stack
        self.engine = engine
        self.nc = nc
        self.js = js
        self.names = names
        self.limits = Limits.from_settings(settings)

    @classmethod
    @asynccontextmanager
    async def wired(
        cls, settings: Settings, service: str, **engine_options: Unpack[EngineOptions]
    ) -> AsyncIterator[Worker]:
        """Tracing, the engine (``build_engine``'s options; a pool of 4 by default), NATS
        and the streams declared; closed in the reverse order on the way out. Whatever the
        service adds to ``stack`` is closed before them."""
        async with AsyncExitStack() as stack:
            provider = setup_tracing(service)
            stack.callback(provider.shutdown)
            options: EngineOptions = {"pool_size": 4, **engine_options}
            engine = build_engine(settings, **options)
            stack.push_async_callback(engine.dispose)
            nc = await build_nats(settings, name=f"chips-{service}")
            stack.push_async_callback(nc.drain)
            js = jetstream(nc)
            names = Names.from_settings(settings)
            await declare_streams(js, names)
            yield cls(settings, service, stack, engine, nc, js, names)

    async def start_appender(self, appender: Appender) -> None:
        """Start ``appender`` (on this worker's connection: ``self.nc``, ``self.names``) and
        stop it on the way out, before NATS is drained."""
        await appender.start()
        self.stack.push_async_callback(appender.stop)

    def checks(self) -> dict[str, Check]:
        """The readiness checks every worker has: Postgres and NATS answer."""

        async def db_ok() -> bool:
            async with self.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
            return True

        async def nats_ok() -> bool:
            return bool(self.nc.is_connected)

        return {"postgres": db_ok, "nats": nats_ok}

    async def consume(
        self,
        handler: Handler,
        stop: asyncio.Event,
        *,
        wanted: Wanted | None = None,
        may_wait: MayWait | None = None,
        pace: float = 0.0,
    ) -> None:
        """``consume_events`` as this service, with its limits, until ``stop``."""
        await consume_events(
            self.nc,
            self.js,
            self.names,
            self.service,
            handler,
            stop,
            wanted=wanted,
            limits=self.limits,
            may_wait=may_wait,
            pace=pace,
        )

    async def consume_batches(
        self,
        handler: BatchHandler,
        stop: asyncio.Event,
        *,
        may_wait: MayWait | None = None,
        wait: float = 1.0,
        pace: float = 0.0,
    ) -> None:
        """``consume_batches`` as this service, with its limits, until ``stop``."""
        await consume_batches(
            self.nc,
            self.js,
            self.names,
            self.service,
            handler,
            stop,
            limits=self.limits,
            may_wait=may_wait,
            wait=wait,
            pace=pace,
        )

    async def serve(self, app: FastAPI, work: Callable[[asyncio.Event], Awaitable[None]]) -> None:
        """Run ``work(stop)`` beside ``app`` (its health routes, and any of its own) until a
        stop signal or the work ends."""
        await serve_with_health(app, self.settings.host, self.settings.port, work)


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
    engine_options: EngineOptions | None = None,
    may_wait: MayWait | None = None,
    wait: float = 1.0,
    pace: float = 0.0,
) -> None:
    """Connect, declare the streams, and consume ``CHIPS_EVENTS`` until stopped.

    ``work_done`` is what the health answers say of the service's job: ``not_built(…)`` while
    it is still to come (see :mod:`chips_common.service.health`). ``checks`` adds readiness
    checks of the service's own, and ``about`` what it says on ``/readyz`` of what it has
    built; each is given the engine. ``beside`` is more work run alongside the consumer
    until the same stop. ``build_batch_handler``, instead of ``build_handler``: a handler
    of each fetched batch's workspaces together (``consume_batches``). ``engine_options``
    are ``build_engine``'s. ``may_wait``: of each event, whether its fold may wait, and
    ``wait`` for how long at most (``held.py``; a batch handler's only). ``pace``: ask for
    events at most that often while they come (``pull.Pace``).
    """
    async with Worker.wired(settings, service, **(engine_options or {})) as worker:
        engine = worker.engine
        consume: Callable[[asyncio.Event], Awaitable[None]]
        if build_batch_handler is not None:
            batch_handler = build_batch_handler(engine)

            async def consume(stop: asyncio.Event) -> None:
                await worker.consume_batches(
                    batch_handler, stop, may_wait=may_wait, wait=wait, pace=pace
                )
        else:
            assert build_handler is not None, "a worker needs a handler"
            handler = build_handler(engine)

            async def consume(stop: asyncio.Event) -> None:
                await worker.consume(handler, stop, may_wait=may_wait, pace=pace)

        async def work(stop: asyncio.Event) -> None:
            if beside is None:
                await consume(stop)
                return
            await asyncio.gather(consume(stop), beside(engine, stop))

        await worker.serve(
            build_health_app(
                {**worker.checks(), **(checks(engine) if checks else {})},
                work_done,
                about(engine) if about else None,
            ),
            work,
        )
