"""Search settings."""

from __future__ import annotations

from chips_common.config import Settings


class SearchSettings(Settings):
    port: int = 8095
    # How often the heads of the log are compared with the index's checkpoints, to catch
    # up a workspace whose last CHIPS_EVENTS message was lost (CHIPS_SEARCH_SWEEP_SECONDS).
    search_sweep_seconds: float = 1.0
