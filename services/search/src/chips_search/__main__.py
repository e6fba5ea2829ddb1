"""``python -m chips_search``: run the search service."""

from __future__ import annotations

import asyncio

from chips_common.service.logs import setup_logging
from chips_search.app import run
from chips_search.config import SearchSettings


def main() -> None:
    settings = SearchSettings()
    setup_logging("search", settings.log_level)
    asyncio.run(run(settings))


if __name__ == "__main__":
    main()
