"""Wiring of the projector."""

from __future__ import annotations

from chips_common.service.worker import run_worker
from chips_projector.config import ProjectorSettings
from chips_projector.consumer import build_handler


async def run(settings: ProjectorSettings) -> None:
    await run_worker(
        settings,
        "projector",
        None,
        build_batch_handler=build_handler,
        # No connection check on the way out of the pool: a batch whose connection was
        # dead is folded again, whole, on a new one (docs/adr/0106).
        engine_options={"pre_ping": False},
    )
