"""Who a request or a socket is: bearer tokens, tickets, the operator secret."""

from __future__ import annotations

import hmac
import secrets

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
)
from chips_common.tokens import hash_token
from chips_gateway.errors import ChipsError

__all__ = [
    "Principal",
    "Tickets",
    "bearer",
    "check_operator",
    "principal_for_credential",
    "principal_for_token",
    "require_principal",
]


async def require_principal(engine: AsyncEngine | Direct, authorization: str | None) -> Principal:
    token = bearer(authorization)
    if token is None:
        raise ChipsError("unauthorized", "send your token as Authorization: Bearer <token>")
    principal = await principal_for_token(engine, token)
    if principal is None:
        raise ChipsError("unauthorized", "that token is not known or was withdrawn")
    return principal


def check_operator(secret: str | None, expected: str) -> None:
    if not secret or not hmac.compare_digest(secret.encode(), expected.encode()):
        raise ChipsError("unauthorized", "creating a workspace needs the operator secret")


class Tickets:
    """Single-use socket tickets in Redis, spent atomically with GETDEL (DESIGN.md §7)."""

    def __init__(self, redis: Redis, prefix: str, ttl_seconds: int) -> None:
        self.redis = redis
        self.prefix = prefix
        self.ttl = ttl_seconds

    @staticmethod
    def away() -> ChipsError:
        # Redis being away costs tickets, nothing else (DESIGN.md §3).
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
