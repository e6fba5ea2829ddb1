"""Wiring of the projector."""

from __future__ import annotations

from chips_common.service.worker import run_worker
from chips_projector.config import ProjectorSettings
from chips_projector.consumer import build_handler


async def run(settings: ProjectorSettings) -> None:
    await run_worker(settings, "projector", build_handler)
