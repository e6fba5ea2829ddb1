"""Streams made again under a name just deleted, on a nats-server of a test module's own.

The server answers a stream's delete before it has removed the stream's files, and
refuses to create a store under that name until they are gone ("error creating store for
stream", error code 10049). A fixture that deletes its streams and adds them again asks
until the server takes them, for at most ten seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from nats.js.errors import ServerError

# JetStream's error code for a stream whose store could not be created.
STORE_NOT_CREATED = 10049


async def afresh(make: Callable[[], Awaitable[object]], seconds: float = 10) -> None:
    """``make()`` (adding streams), asked again while the server cannot create a store
    yet."""
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        try:
            await make()
            return
        except ServerError as exc:
            if exc.err_code != STORE_NOT_CREATED or asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.05)
