"""Running a worker service: its consumer loop beside a small health server.

SIGTERM and SIGINT set ``stop``; the loop finishes the batch in flight, then the health
server stops (docs/architecture/code-style.md, A NATS consumer).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
from collections.abc import Awaitable, Callable

import uvicorn
from fastapi import FastAPI


def install_stop_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)


def freeze_the_wiring() -> None:
    """Move every object made so far (modules, classes, the service's wiring: its engine,
    connections, caches) out of the collector's reach, once the service is wired.

    A full collection walks every object the collector tracks: about 140,000 in a wired
    service, 140 ms of CPU on this project's machine, every few thousand messages, for
    objects that live as long as the process. Frozen, they are never walked again, and a
    full collection walks only what was made since (docs/adr/0165). What was wired and
    is dropped later in a reference cycle is not freed: the wiring is made once."""
    gc.collect()
    gc.freeze()


async def serve_with_health(
    health_app: FastAPI,
    host: str,
    port: int,
    work: Callable[[asyncio.Event], Awaitable[None]],
) -> None:
    """Run ``work(stop)`` and a health server until a stop signal or the work ends."""
    stop = asyncio.Event()
    install_stop_signals(stop)
    freeze_the_wiring()
    server = uvicorn.Server(
        uvicorn.Config(health_app, host=host, port=port, log_level="warning", lifespan="off")
    )
    # The service's own handlers (above) decide when to stop; uvicorn must not take them.
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    serving = asyncio.create_task(server.serve())
    try:
        await work(stop)
    finally:
        server.should_exit = True
        await serving
