"""``python -m chips_notifier``: run the notifier service (docs/adr/0132)."""

from __future__ import annotations

import uvloop

from chips_common.service.logs import setup_logging
from chips_notifier.app import run
from chips_notifier.config import NotifierSettings


def main() -> None:
    settings = NotifierSettings()
    setup_logging("notifier", settings.log_level)
    uvloop.run(run(settings))


if __name__ == "__main__":
    main()
