"""Wiring of the search service."""

from __future__ import annotations

from chips_common.service.worker import run_worker
from chips_search.config import SearchSettings
from chips_search.consumer import build_handler


async def run(settings: SearchSettings) -> None:
    await run_worker(settings, "search", build_handler)
