"""Who a request or a socket is: bearer tokens, tickets, the operator secret."""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.db import tables as t
from chips_common.tokens import hash_token
from chips_gateway.errors import ChipsError


@dataclass(frozen=True)
class Principal:
    """The participant behind a credential."""

    credential_id: str
    workspace_id: str
    participant_id: str
    kind: str  # person | harness
    name: str
    role: str
    owner_id: str | None

    @property
    def actor(self) -> dict[str, str]:
        return {"kind": self.kind, "id": self.participant_id}


def bearer(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


async def principal_for_token(engine: AsyncEngine, token: str) -> Principal | None:
    return await principal_where(engine, t.credentials.c.token_hash == hash_token(token))


async def principal_for_credential(engine: AsyncEngine, credential_id: str) -> Principal | None:
    return await principal_where(engine, t.credentials.c.id == credential_id)


async def principal_where(engine: AsyncEngine, condition: object) -> Principal | None:
    query = (
        select(
            t.credentials.c.id,
            t.credentials.c.workspace_id,
            t.participants.c.id.label("pid"),
            t.participants.c.kind,
            t.participants.c.name,
            t.participants.c.role,
            t.participants.c.owner_id,
        )
        .select_from(
            t.credentials.join(
                t.participants, t.credentials.c.participant_id == t.participants.c.id
            )
        )
        .where(and_(condition, t.credentials.c.revoked_at.is_(None)))  # type: ignore[arg-type]
    )
    async with engine.connect() as conn:
        row = (await conn.execute(query)).first()
    if row is None:
        return None
    return Principal(row.id, row.workspace_id, row.pid, row.kind, row.name, row.role, row.owner_id)


async def require_principal(engine: AsyncEngine, authorization: str | None) -> Principal:
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
