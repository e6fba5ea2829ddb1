"""Wiring of the search service."""

from __future__ import annotations

from chips_common.service.health import not_built
from chips_common.service.worker import run_worker
from chips_search.config import SearchSettings
from chips_search.consumer import build_handler

# What /healthz says until the work lands: pass nothing to run_worker then.
NOT_BUILT = not_built(
    "indexing and search queries are still to come; it only keeps up with the stream"
)


async def run(settings: SearchSettings) -> None:
    await run_worker(settings, "search", build_handler, NOT_BUILT)
