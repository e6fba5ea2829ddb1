"""``python -m chips_attachments``: run the attachments service."""

from __future__ import annotations

import uvloop

from chips_attachments.app import run
from chips_attachments.config import AttachmentsSettings
from chips_common.service.logs import setup_logging


def main() -> None:
    settings = AttachmentsSettings()
    setup_logging("attachments", settings.log_level)
    uvloop.run(run(settings))


if __name__ == "__main__":
    main()
