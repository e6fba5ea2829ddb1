"""Referee settings."""

from __future__ import annotations

from chips_common.config import Settings


class RefereeSettings(Settings):
    port: int = 8094
