"""The VAPID key pair (RFC 8292): made once by the first notifier to start, kept in
Postgres, the same for every replica after (docs/adr/0132)."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import UTC, datetime

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.db.notifier_tables import notifier_keys

NAME = "vapid"


@dataclass(frozen=True)
class VapidKeys:
    private_pem: str
    public_key: str  # base64url of the uncompressed point, what a browser subscribes with


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_keys() -> VapidKeys:
    private = ec.generate_private_key(ec.SECP256R1())
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    point = private.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    return VapidKeys(pem, b64url(point))


async def load_or_make(engine: AsyncEngine) -> VapidKeys:
    """The kept pair; made and kept first if there is none (two notifiers starting
    together keep whichever was inserted first, and both read it back)."""
    made = make_keys()
    c = notifier_keys.c
    async with engine.begin() as conn:
        await conn.execute(
            pg_insert(notifier_keys)
            .values(
                name=NAME,
                private_pem=made.private_pem,
                public_key=made.public_key,
                created_at=datetime.now(UTC),
            )
            .on_conflict_do_nothing(index_elements=["name"])
        )
        row = (await conn.execute(select(c.private_pem, c.public_key).where(c.name == NAME))).one()
    return VapidKeys(row.private_pem, row.public_key)
