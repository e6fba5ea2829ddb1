"""Wiring of the attachments service."""

from __future__ import annotations

from chips_attachments.config import AttachmentsSettings
from chips_attachments.consumer import build_handler
from chips_common.service.worker import run_worker


async def run(settings: AttachmentsSettings) -> None:
    await run_worker(settings, "attachments", build_handler)
