"""Connecting to NATS, with bounded retries at start-up."""

from __future__ import annotations

import asyncio
import logging

import nats
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from chips_common.config import Settings

log = logging.getLogger(__name__)


async def build_nats(settings: Settings, *, name: str, attempts: int = 30) -> NATS:
    """Connect to NATS, waiting up to ``attempts`` seconds for it to answer."""
    last: Exception | None = None
    for _ in range(attempts):
        try:
            # Several URLs, comma separated, name a cluster's nodes; the client learns the
            # rest from the server and moves to another node when its own goes.
            return await nats.connect(
                [url.strip() for url in settings.nats_url.split(",") if url.strip()],
                name=name,
                max_reconnect_attempts=-1,
                reconnect_time_wait=0.5,
                connect_timeout=2,
            )
        except Exception as exc:  # any failure to connect is worth another try
            last = exc
            await asyncio.sleep(1)
    raise RuntimeError(f"NATS at {settings.nats_url} did not answer: {last}")


def jetstream(nc: NATS) -> JetStreamContext:
    return nc.jetstream(timeout=10)
