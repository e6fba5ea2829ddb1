"""``python -m chips_search [run | rebuild | digest]``."""

from __future__ import annotations

import argparse
import asyncio

import uvloop

from chips_common.db.engine import build_engine
from chips_common.service.logs import setup_logging
from chips_search.app import run
from chips_search.config import SearchSettings
from chips_search.rebuild import digest, rebuild


async def one_shot(settings: SearchSettings, command: str) -> None:
    engine = build_engine(settings, pool_size=2)
    try:
        if command == "rebuild":
            count = await rebuild(engine)
            print(f"rebuilt the search index of {count} workspaces from seq 0")
        else:
            print(await digest(engine))
    finally:
        await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(prog="chips_search")
    parser.add_argument("command", nargs="?", default="run", choices=["run", "rebuild", "digest"])
    args = parser.parse_args()
    settings = SearchSettings()
    setup_logging("search", settings.log_level)
    if args.command == "run":
        uvloop.run(run(settings))
    else:
        asyncio.run(one_shot(settings, args.command))


if __name__ == "__main__":
    main()
