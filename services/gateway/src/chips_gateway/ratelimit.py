"""Write rate limits: token buckets per socket (here) and per credential (in Redis).

A socket lives on one gateway, so its bucket is a plain object. A credential may write
through several gateways at once, so its bucket is kept in Redis and taken from by a Lua
script (atomic, timed by Redis's own clock). To keep a Redis round trip off every write,
a gateway takes a few tokens at a time and spends them locally for a quarter of a second.

Redis is a soft dependency (docs/architecture/design.md §3): while it does not answer, the
per-credential limit is not applied (the per-socket one still is) and writes go on.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from dataclasses import dataclass, field

from redis.asyncio import Redis
from redis.exceptions import RedisError

from chips_gateway import metrics

log = logging.getLogger(__name__)


def refill(tokens: float, at: float, now: float, rate: float, burst: float) -> float:
    """The tokens a bucket holds at ``now``, having held ``tokens`` at ``at``."""
    return min(burst, tokens + max(0.0, now - at) * rate)


def retry_after(wait: float) -> float:
    """The seconds a client is told to wait: ``wait`` rounded up to the millisecond.

    Never 0: a bucket a ten-thousandth of a token short would otherwise be reported as
    "send again in 0 s", which a client reads as "now".
    """
    return max(0.001, math.ceil(wait * 1000.0) / 1000.0)


@dataclass(slots=True)
class Bucket:
    """A token bucket: ``burst`` at once, ``rate`` per second after that."""

    rate: float
    burst: float
    tokens: float = math.nan
    at: float = 0.0

    def take(self, now: float, cost: float = 1.0) -> float:
        """Take ``cost`` tokens; 0.0 when taken, else the seconds until they would be."""
        if math.isnan(self.tokens):
            self.tokens, self.at = self.burst, now
        self.tokens = refill(self.tokens, self.at, now, self.rate, self.burst)
        self.at = now
        if self.tokens >= cost:
            self.tokens -= cost
            return 0.0
        return (cost - self.tokens) / self.rate if self.rate > 0 else math.inf


# KEYS[1]: the bucket. ARGV: rate per second, burst, tokens wanted. Grants up to the
# tokens wanted (a whole number, maybe 0) and, when none, the seconds to wait for one. A
# bucket may be in debt (PENALIZE): it grants nothing until it is out of it.
TAKE = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local held = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(held[1])
local at = tonumber(held[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local granted = math.max(0, math.min(want, math.floor(tokens)))
tokens = tokens - granted
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('EXPIRE', KEYS[1], math.ceil(burst / rate) + 10)
local wait = 0
if granted == 0 then
  wait = (1 - tokens) / rate
end
return {granted, tostring(wait)}
"""

# KEYS[1]: the bucket. ARGV: rate per second, burst, seconds. Leaves the bucket in debt
# for that long: a credential whose socket was closed for writing through its refusals
# gets nothing until then (docs/adr/0065).
PENALIZE = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local seconds = tonumber(ARGV[3])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
redis.call('HSET', KEYS[1], 'tokens', tostring(-rate * seconds), 'at', tostring(now))
redis.call('EXPIRE', KEYS[1], math.ceil(seconds + burst / rate) + 10)
return 1
"""

# KEYS[1]: the bucket. ARGV: rate per second. The seconds until a bucket in debt is out of
# it ("0" when it is not in debt).
DEBT = """
local rate = tonumber(ARGV[1])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local held = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(held[1])
local at = tonumber(held[2])
if tokens == nil or at == nil then
  return '0'
end
tokens = tokens + math.max(0, now - at) * rate
if tokens >= 0 then
  return '0'
end
return tostring(-tokens / rate)
"""


def tokens_wanted(chunk: int, ahead: int, burst: int) -> int:
    """How many tokens one take from a credential's bucket asks for: the usual chunk, or
    this write and the ``ahead`` more its socket has read and will ask for straight after,
    whichever is more; never more than the bucket's burst (docs/adr/0158)."""
    return max(chunk, min(1 + max(ahead, 0), burst))


# How long tokens taken from Redis may be spent locally, and how many are taken at once
# (about this long's worth at the configured rate).
HOLD_SECONDS = 0.25


@dataclass
class Held:
    tokens: int = 0
    until: float = 0.0


@dataclass
class CredentialLimiter:
    redis: Redis
    prefix: str
    rate: float
    burst: int
    held: dict[str, Held] = field(default_factory=dict)
    down_until: float = 0.0
    # One take from Redis at a time per credential: the sockets that find its held tokens
    # spent wait for that take and share its chunk. Each taking a chunk of its own drained
    # the bucket many times faster than the writes spent it, and refused writes far below
    # the rate.
    asking: dict[str, asyncio.Future[None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.script = self.redis.register_script(TAKE)
        self.penalize_script = self.redis.register_script(PENALIZE)
        self.debt_script = self.redis.register_script(DEBT)
        self.chunk = max(1, min(self.burst, int(self.rate * HOLD_SECONDS / 4) or 1))

    def key(self, credential_id: str) -> str:
        return f"{self.prefix}:rate:{credential_id}"

    async def take(self, credential_id: str, ahead: int = 0) -> float:
        """Take one write's token for the credential: 0.0, or the seconds to wait.

        ``ahead`` is how many more writes the socket has read and will ask for at once
        (docs/adr/0158): when a take from Redis is due, it asks for them too, so that a
        burst the socket has already read costs one round trip, not one every chunk.
        """
        while True:
            now = time.monotonic()
            held = self.held.get(credential_id)
            if held is not None and held.tokens > 0 and now < held.until:
                held.tokens -= 1
                return 0.0
            if now < self.down_until:
                return 0.0
            pending = self.asking.get(credential_id)
            if pending is None:
                break
            # Another socket is taking this credential's next chunk: share it.
            await asyncio.shield(pending)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.asking[credential_id] = done
        try:
            return await self.take_from_redis(credential_id, now, ahead)
        finally:
            del self.asking[credential_id]
            done.set_result(None)

    async def take_from_redis(self, credential_id: str, now: float, ahead: int = 0) -> float:
        """One take of a chunk from the credential's bucket in Redis; one token is spent."""
        metrics.RATE_LIMIT_TAKES.inc()
        want = tokens_wanted(self.chunk, ahead, self.burst)
        try:
            granted, wait = await self.script(
                keys=[self.key(credential_id)], args=[self.rate, self.burst, want]
            )
        except (RedisError, OSError) as exc:
            # Rate counters are what a Redis outage may cost: write on, try again soon.
            if now >= self.down_until:
                log.warning("Redis did not answer the rate limiter (%s); not limiting", exc)
            self.down_until = now + 1.0
            return 0.0
        granted = int(granted)
        if granted == 0:
            return max(float(wait), 0.001)
        if len(self.held) > 10_000:
            self.held.clear()
        self.held[credential_id] = Held(granted - 1, now + HOLD_SECONDS)
        return 0.0

    async def penalize(self, credential_id: str, seconds: float) -> None:
        """Leave the credential's bucket in debt for ``seconds`` (a socket kept on writing)."""
        self.held.pop(credential_id, None)
        try:
            await self.penalize_script(
                keys=[self.key(credential_id)], args=[self.rate, self.burst, seconds]
            )
        except (RedisError, OSError) as exc:
            log.warning("Redis did not answer the rate limiter (%s); no penalty", exc)

    async def debt(self, credential_id: str) -> float:
        """Seconds until the credential's bucket is out of debt; 0.0 when it is not in it."""
        if time.monotonic() < self.down_until:
            return 0.0
        try:
            wait = await self.debt_script(keys=[self.key(credential_id)], args=[self.rate])
        except (RedisError, OSError):
            # Rate counters are what a Redis outage may cost: let it in, ask again soon.
            self.down_until = time.monotonic() + 1.0
            return 0.0
        return max(float(wait), 0.0)
