"""What the gateway's handlers share: built once in ``build_app``'s lifespan."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Header, Request
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.db.direct import Direct
from chips_common.nats.nudge import Nudger, no_nudge
from chips_gateway import metrics
from chips_gateway.appender import AppendClient
from chips_gateway.auth import Principal, Tickets, require_principal
from chips_gateway.config import GatewaySettings
from chips_gateway.errors import ChipsError
from chips_gateway.feeds import Feeds
from chips_gateway.files import FileLinks
from chips_gateway.known import Known
from chips_gateway.ratelimit import CredentialLimiter, retry_after
from chips_gateway.reader import LogReader
from chips_gateway.restarts import Restarts
from chips_gateway.search import SearchReader
from chips_gateway.sockets import Sockets


@dataclass
class Context:
    settings: GatewaySettings
    engine: AsyncEngine
    # Who a token is, asked on every request: on psycopg itself (chips_common.db.principals).
    auth: Direct
    redis: Redis
    appender: AppendClient
    reader: LogReader
    feeds: Feeds
    tickets: Tickets
    limiter: CredentialLimiter
    links: FileLinks
    search: SearchReader
    restarts: Restarts
    sockets: Sockets = field(default_factory=Sockets)
    # Asks a consumer holding events to fold a workspace now (docs/adr/0168).
    nudge: Nudger = no_nudge
    # Who tokens were, remembered between requests (docs/adr/0169); None: always asked.
    known: Known | None = None


async def get_context(request: Request) -> Context:
    # async, though it awaits nothing: FastAPI runs a plain ``def`` dependency in its
    # thread pool, a hop to a thread and back on every request for a dictionary lookup.
    ctx: Context = request.app.state.ctx
    return ctx


Ctx = Annotated[Context, Depends(get_context)]


async def get_principal(
    ctx: Ctx, authorization: Annotated[str | None, Header()] = None
) -> Principal:
    return await require_principal(ctx.auth, authorization, ctx.settings.signing_key, ctx.known)


Caller = Annotated[Principal, Depends(get_principal)]

# The Idempotency-Key header a write route takes: the same request again with it is a
# duplicate, another request with it is refused (docs/adr/0126). Without it a write is
# given a fresh key, so a retry of it may be logged twice.
IdempotencyKey = Annotated[
    str | None,
    Header(
        min_length=1,
        max_length=200,
        description="makes a retry safe: the same request again is answered as the first",
    ),
]


async def check_write_rate(ctx: Context, caller: Principal) -> None:
    """An HTTP write takes a token from its credential's bucket, or is refused with 429."""
    wait = await ctx.limiter.take(caller.credential_id)
    if wait > 0.0:
        metrics.RATE_LIMITED.labels("http").inc()
        raise ChipsError(
            "rate_limited",
            f"too many writes; send this one again in {retry_after(wait):.3f} s",
            retry_after=retry_after(wait),
        )
