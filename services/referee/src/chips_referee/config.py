"""Referee settings."""

from __future__ import annotations

from pydantic import Field

from chips_common.config import Settings


class RefereeSettings(Settings):
    port: int = 8094
    # Nobody working this long after an agent's words that reached nobody, and the room's
    # lead is handed them (docs/product/websocket.md: twenty seconds).
    lead_handoff_seconds: float = Field(default=20.0, gt=0)
    # How often the referee's clock looks for rooms whose moment has come.
    clock_seconds: float = Field(default=0.5, gt=0)
