"""``python -m chips_referee``: run the referee service."""

from __future__ import annotations

import uvloop

from chips_common.service.logs import setup_logging
from chips_referee.app import run
from chips_referee.config import RefereeSettings


def main() -> None:
    settings = RefereeSettings()
    setup_logging("referee", settings.log_level)
    uvloop.run(run(settings))


if __name__ == "__main__":
    main()
