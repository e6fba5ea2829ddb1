"""Attachments settings."""

from __future__ import annotations

from chips_common.config import Settings


class AttachmentsSettings(Settings):
    port: int = 8093
