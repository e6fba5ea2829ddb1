"""Search settings."""

from __future__ import annotations

from chips_common.config import Settings


class SearchSettings(Settings):
    port: int = 8095
