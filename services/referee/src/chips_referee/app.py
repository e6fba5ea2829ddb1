"""Wiring of the referee service."""

from __future__ import annotations

from chips_common.service.worker import run_worker
from chips_referee.config import RefereeSettings
from chips_referee.consumer import build_handler


async def run(settings: RefereeSettings) -> None:
    await run_worker(settings, "referee", build_handler)
