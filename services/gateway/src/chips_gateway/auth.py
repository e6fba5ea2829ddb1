"""Who a request or a socket is: bearer tokens, tickets, the operator secret."""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Awaitable

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.db.direct import Direct

# Who a token is, decided as the attachments service decides it (one query, shared).
from chips_common.db.principals import (
    Principal,
    bearer,
    principal_for_credential,
    principal_for_token,
    token_lookup,
)
from chips_common.rules.devices import SESSION_PREFIX
from chips_common.tokens import hash_token
from chips_gateway import metrics
from chips_gateway.errors import DATABASE_AWAY, ChipsError, database_away
from chips_gateway.known import Known

log = logging.getLogger(__name__)

__all__ = [
    "Principal",
    "Tickets",
    "bearer",
    "check_operator",
    "principal_for_credential",
    "principal_for_token",
    "require_principal",
    "signed_in",
]

# Who a token was, answered from memory or by Postgres (bound once: every request counts).
REMEMBERED = metrics.PRINCIPALS.labels("remembered")
ASKED = metrics.PRINCIPALS.labels("asked")

# What a refusal says when the database that knows the tokens does not answer.
CHECKING = "check who you are"


async def require_principal(
    engine: AsyncEngine | Direct,
    authorization: str | None,
    signing_key: str = "",
    known: Known | None = None,
) -> Principal:
    """Who the request's bearer token is; ``known``: the answers this replica remembers
    (docs/adr/0169), asked first and told what Postgres answers."""
    token = bearer(authorization)
    if token is None:
        raise ChipsError("unauthorized", "send your token as Authorization: Bearer <token>")
    principal = await (
        signed_in(principal_for_token(engine, token, signing_key))
        if known is None
        else remembered(engine, token, signing_key, known)
    )
    if principal is None:
        if token.startswith(SESSION_PREFIX):
            raise ChipsError(
                "unauthorized",
                "this device's session expired or the device was revoked: sign in again",
            )
        raise ChipsError("unauthorized", "that token is not known, expired, or was withdrawn")
    return principal


async def remembered(
    engine: AsyncEngine | Direct, token: str, signing_key: str, known: Known
) -> Principal | None:
    """Who a token is, from what this replica remembers or else from Postgres.

    A session token's signature and expiry are checked every time; what is remembered is
    its device's answer.
    """
    lookup = token_lookup(token, signing_key)
    if lookup is None:
        return None
    principal = known.get(lookup.key)
    if principal is not None:
        REMEMBERED.inc()
        return principal
    ASKED.inc()
    stamp = known.stamp()  # a notice heard while Postgres is asked may be about this answer
    principal = await signed_in(lookup.ask(engine))
    if principal is not None:
        known.put(lookup.key, principal, stamp)
    return principal


async def signed_in(lookup: Awaitable[Principal | None]) -> Principal | None:
    """Who a token or a ticket's credential is; ``unavailable`` (with a retry hint) when the
    database does not answer, so a caller can tell it from a wrong token or no gateway."""
    try:
        return await lookup
    except DATABASE_AWAY as exc:
        log.warning("could not check a token: the database does not answer (%s)", exc)
        raise database_away(CHECKING) from None


def check_operator(secret: str | None, expected: str) -> None:
    if not secret or not hmac.compare_digest(secret.encode(), expected.encode()):
        raise ChipsError("unauthorized", "creating a workspace needs the operator secret")


class Tickets:
    """Single-use socket tickets in Redis, spent atomically with GETDEL (docs/architecture/design.md
    §7)."""

    def __init__(self, redis: Redis, prefix: str, ttl_seconds: int) -> None:
        self.redis = redis
        self.prefix = prefix
        self.ttl = ttl_seconds

    @staticmethod
    def away() -> ChipsError:
        # Redis being away costs tickets, nothing else (docs/architecture/design.md §3).
        return ChipsError(
            "unavailable",
            "socket tickets cannot be issued or spent right now (their store does not "
            "answer); try again shortly, or open the socket with Authorization: Bearer",
        )

    def _key(self, ticket: str) -> str:
        return f"{self.prefix}:ticket:{hash_token(ticket)}"

    async def issue(self, principal: Principal) -> str:
        ticket = f"chips_tk_{secrets.token_urlsafe(24)}"
        try:
            await self.redis.set(self._key(ticket), principal.credential_id, ex=self.ttl)
        except (RedisError, OSError):
            raise self.away() from None
        return ticket

    async def spend(self, ticket: str) -> str | None:
        """The credential the ticket was issued to, or None when spent, expired or unknown."""
        try:
            value = await self.redis.getdel(self._key(ticket))
        except (RedisError, OSError):
            raise self.away() from None
        if value is None:
            return None
        return value.decode() if isinstance(value, bytes) else str(value)
