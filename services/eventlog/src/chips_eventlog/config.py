"""Eventlog settings."""

from __future__ import annotations

from chips_common.config import Settings


class EventlogSettings(Settings):
    port: int = 8091
    batch_size: int = 256
    outbox_sweep_seconds: float = 2.0
