"""Wiring of the projector."""

from __future__ import annotations

from chips_common.db.engine import build_direct
from chips_common.service.worker import run_worker
from chips_projector.config import ProjectorSettings
from chips_projector.consumer import build_handler, may_wait


async def run(settings: ProjectorSettings) -> None:
    # A batch of posts, the common batch, is folded on psycopg itself (docs/adr/0120).
    direct = build_direct(settings, size=1)
    try:
        await run_worker(
            settings,
            "projector",
            None,
            build_batch_handler=lambda engine: build_handler(engine, direct),
            # No connection check on the way out of the pool: a batch whose connection was
            # dead is folded again, whole, on a new one (docs/adr/0106).
            engine_options={"pre_ping": False},
            # Posts are folded together, a moment later (docs/adr/0168).
            may_wait=may_wait,
            wait=settings.consumer_hold_seconds,
        )
    finally:
        await direct.close()
