"""Connecting to NATS, with bounded retries at start-up."""

from __future__ import annotations

import asyncio
import logging

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from chips_common.config import Settings

log = logging.getLogger(__name__)


def header_lines(raw: bytes) -> dict[str, str]:
    """A message's header block (``Name: Value`` lines) read as nats-py reads it, with
    fewer Python calls.

    nats-py tells a header name with whitespace in it by a generator over the name's
    characters: about 25 calls a message in every process that receives one (the event's
    ``Nats-Msg-Id`` and ``traceparent``), more than anything else these processes call
    a message. Here the name is split once, in C: a name that splits into anything but
    itself had whitespace in it (``str.isspace``'s, as nats-py asks). Property-tested
    against nats-py's own reading.
    """
    out: dict[str, str] = {}
    for line in raw.split(b"\r\n"):
        if not line:
            continue
        name, sep, value = line.partition(b":")
        if not sep:
            continue
        try:
            key = name.strip().decode("ascii")
        except UnicodeDecodeError:
            continue
        if key and key.split() != [key]:
            continue
        out[key] = value.strip().decode("utf-8", "replace")
    return out


class Client(NATS):
    """nats-py's client, reading headers with :func:`header_lines`."""

    _parse_header_lines = staticmethod(header_lines)


async def build_nats(settings: Settings, *, name: str, attempts: int = 30) -> NATS:
    """Connect to NATS, waiting up to ``attempts`` seconds for it to answer."""
    last: Exception | None = None
    for _ in range(attempts):
        try:
            # Several URLs, comma separated, name a cluster's nodes; the client learns the
            # rest from the server and moves to another node when its own goes.
            nc = Client()
            await nc.connect(
                [url.strip() for url in settings.nats_url.split(",") if url.strip()],
                name=name,
                max_reconnect_attempts=-1,
                reconnect_time_wait=0.5,  # type: ignore[arg-type]  # slept: a float is fine
                connect_timeout=2,
            )
            return nc
        except Exception as exc:  # any failure to connect is worth another try
            last = exc
            await asyncio.sleep(1)
    raise RuntimeError(f"NATS at {settings.nats_url} did not answer: {last}")


def jetstream(nc: NATS) -> JetStreamContext:
    return nc.jetstream(timeout=10)
