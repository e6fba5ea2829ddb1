"""The per-credential limiter against the stack's real Redis.

A credential writing through many sockets at once, far below its rate, is never refused:
the gateway's sockets share one Redis take at a time instead of each draining a chunk
of the bucket (which refused a few writes even with every limit at a million a second).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from chips_devstack.stack import Stack
from chips_gateway.ratelimit import HOLD_SECONDS, CredentialLimiter


@pytest.fixture
async def redis(stack: Stack) -> AsyncIterator[Redis]:
    client = Redis.from_url(stack.env["CHIPS_REDIS_URL"])
    yield client
    await client.aclose()


async def test_many_sockets_of_one_credential_under_its_rate_are_never_refused(
    redis: Redis, stack: Stack
) -> None:
    # 1,000 a second, burst 1,000: each Redis take grants a chunk of 62 tokens. Sixteen
    # writers taking at once 640 tokens between them in well under a second is under
    # both the burst and the rate, so nothing may be refused.
    limiter = CredentialLimiter(
        redis, f"{stack.env['CHIPS_REDIS_PREFIX']}-lim-{secrets.token_hex(3)}", 1000.0, 1000
    )
    credential = "cred_many_sockets"

    async def writer() -> list[float]:
        waits = []
        for _ in range(40):
            waits.append(await limiter.take(credential))
        return waits

    rounds = await asyncio.gather(*(writer() for _ in range(16)))
    refused = [w for waits in rounds for w in waits if w > 0.0]
    assert refused == [], f"{len(refused)} of 640 takes refused under the rate"
    # The takes went to Redis once per chunk, not once per waiting socket.
    left = await redis.hget(limiter.key(credential), "tokens")
    assert float(left) >= 1000 - 640 - limiter.chunk, (left, limiter.chunk, HOLD_SECONDS)
