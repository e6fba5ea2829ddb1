"""``python -m chips_eventlog``: run the eventlog (on uvloop, like the gateway)."""

from __future__ import annotations

import uvloop

from chips_common.service.logs import setup_logging
from chips_eventlog.app import run
from chips_eventlog.config import EventlogSettings


def main() -> None:
    settings = EventlogSettings()
    setup_logging("eventlog", settings.log_level)
    uvloop.run(run(settings))


if __name__ == "__main__":
    main()
