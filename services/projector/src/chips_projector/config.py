"""Projector settings."""

from __future__ import annotations

from chips_common.config import Settings


class ProjectorSettings(Settings):
    port: int = 8092
