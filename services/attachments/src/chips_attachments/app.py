"""Wiring of the attachments service."""

from __future__ import annotations

from chips_attachments.config import AttachmentsSettings
from chips_attachments.consumer import build_handler
from chips_common.service.health import not_built
from chips_common.service.worker import run_worker

# What /healthz says until the work lands: pass nothing to run_worker then.
NOT_BUILT = not_built("uploads and downloads are still to come; it only keeps up with the stream")


async def run(settings: AttachmentsSettings) -> None:
    await run_worker(settings, "attachments", build_handler, NOT_BUILT)
