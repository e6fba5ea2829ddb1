"""Wiring of the referee service."""

from __future__ import annotations

from chips_common.service.health import not_built
from chips_common.service.worker import run_worker
from chips_referee.config import RefereeSettings
from chips_referee.consumer import build_handler

# What /healthz says until the work lands: pass nothing to run_worker then.
NOT_BUILT = not_built("the referee's rules are still to come; it only keeps up with the stream")


async def run(settings: RefereeSettings) -> None:
    await run_worker(settings, "referee", build_handler, NOT_BUILT)
