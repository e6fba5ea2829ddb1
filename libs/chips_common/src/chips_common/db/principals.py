"""Who a credential is: the participant behind a bearer token or a credential id.

The gateway and the attachments service both answer requests that carry a token (the
gateway's HTTP and sockets; an upload, a fetch by the caller's own token or by the
credential a signed URL names), and both decide the same way: a credential that was
withdrawn is nobody. One query, here, so the two cannot drift.

It is asked on every HTTP request, so it is one round trip in autocommit with no ping
first: no BEGIN, ping and ROLLBACK around it. The gateway asks it on psycopg itself
(``chips_common.db.direct``, docs/adr/0120), where SQLAlchemy's layers cost more than the
round trip; a service that asks it rarely passes its engine. Either way a connection
found dead is tried once more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common.db import tables as t
from chips_common.db.direct import Conn, Direct, compiled
from chips_common.db.retry import once_more
from chips_common.rules.devices import SESSION_PREFIX, session_device
from chips_common.tokens import hash_token


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
    # When the credential stops working by itself (an API key's or a device's expiry), if
    # ever: what a replica that remembers the answer reads it against.
    expires_at: datetime | None = field(default=None, compare=False)

    @property
    def actor(self) -> dict[str, str]:
        return {"kind": self.kind, "id": self.participant_id}


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


@dataclass(frozen=True)
class TokenLookup:
    """How a token's participant is found: by its device for a session token (its
    signature and expiry already checked), by its hash for any other. ``key`` names the
    answer (what a replica that remembers answers keeps it under)."""

    key: str
    device_id: str | None = None

    async def ask(self, engine: AsyncEngine | Direct) -> Principal | None:
        if self.device_id is not None:
            return await principal_for_credential(engine, self.device_id)
        return await principal_for_hash(engine, self.key)


def token_lookup(token: str, signing_key: str = "") -> TokenLookup | None:
    """How to find the token's participant; None for a session token whose signature or
    expiry does not hold (docs/adr/0125), which is nobody."""
    if token.startswith(SESSION_PREFIX):
        device_id = session_device(signing_key, token) if signing_key else None
        return None if device_id is None else TokenLookup(f"device:{device_id}", device_id)
    return TokenLookup(hash_token(token))


async def principal_for_token(
    engine: AsyncEngine | Direct, token: str, signing_key: str = ""
) -> Principal | None:
    """The token's participant (only its hash is kept), unless it was withdrawn or expired.

    A device's session token (``chips_ss_…``, docs/adr/0125) names its device: it is that
    device's participant while the session lasts and the device is not revoked.
    """
    lookup = token_lookup(token, signing_key)
    return None if lookup is None else await lookup.ask(engine)


async def principal_for_hash(engine: AsyncEngine | Direct, token_hash: str) -> Principal | None:
    """The participant of the token with this hash, unless it was withdrawn or expired."""
    return await _principal(engine, _BY_TOKEN, token_hash)


async def principal_for_credential(
    engine: AsyncEngine | Direct, credential_id: str
) -> Principal | None:
    """The credential's participant, unless the credential was withdrawn."""
    return await _principal(engine, _BY_CREDENTIAL, credential_id)


# Built once: made afresh on every request, the query's construction and its cache key
# cost the gateway more than the round trip.
def _where(column: Any) -> Any:
    c, p = t.credentials.c, t.participants.c
    return (
        select(
            c.id,
            c.workspace_id,
            p.id.label("pid"),
            p.kind,
            p.name,
            p.role,
            p.owner_id,
            c.expires_at,
        )
        .select_from(t.credentials.join(t.participants, c.participant_id == p.id))
        .where(
            and_(
                column == bindparam("value"),
                c.revoked_at.is_(None),
                or_(c.expires_at.is_(None), c.expires_at > func.now()),
            )
        )
    )


_BY_TOKEN = _where(t.credentials.c.token_hash)
_BY_CREDENTIAL = _where(t.credentials.c.id)
_DIRECT = {id(q): compiled(q) for q in (_BY_TOKEN, _BY_CREDENTIAL)}


async def _principal(source: AsyncEngine | Direct, query: Any, value: str) -> Principal | None:
    row: Any
    if isinstance(source, Direct):
        sql = _DIRECT[id(query)]

        async def read_direct(conn: Conn) -> Any:
            return await (await conn.execute(sql, {"value": value})).fetchone()

        row = await source.run(read_direct)
    else:

        async def read(conn: AsyncConnection) -> Any:
            return (await conn.execute(query, {"value": value})).first()

        row = await once_more(source, read)
    if row is None:
        return None
    return Principal(
        row.id,
        row.workspace_id,
        row.pid,
        row.kind,
        row.name,
        row.role,
        row.owner_id,
        row.expires_at,
    )
