"""A paired device's sessions, and the devices a person lists and revokes (docs/adr/0125).

A paired device signs a fresh challenge for a short-lived session (``POST /v1/sessions``),
which it sends as a bearer token. A person lists their devices and keys and revokes one
(``DELETE /v1/devices/{id}``): its sockets close on every gateway at once, and its next
request is refused. ``pair_own`` logs a further device of the caller's own under a
credential made here (an API key, a passkey).
"""

from __future__ import annotations

import contextlib
import time
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field
from redis.exceptions import RedisError
from sqlalchemy import and_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from chips_common.append import IssuedCredential
from chips_common.db import tables as t
from chips_common.rules.devices import (
    NONCE_TTL,
    DeviceRefusal,
    check_signature,
    check_time,
    issue_session,
)
from chips_gateway.answers.people import Device, DeviceRevoked, Devices, Session
from chips_gateway.api.identity import request_key
from chips_gateway.api.people import ADMINS, need_person, refusal
from chips_gateway.auth import Principal
from chips_gateway.context import Caller, Context, Ctx, IdempotencyKey, check_write_rate
from chips_gateway.errors import ChipsError
from chips_gateway.sockets import REVOKED_WHY, seen_key

router = APIRouter(prefix="/v1")


class SessionIn(BaseModel):
    device_id: str = Field(max_length=100)
    ts: int
    nonce: str = Field(min_length=16, max_length=64)
    signature: str = Field(min_length=40, max_length=200)


async def pair_own(
    ctx: Context, caller: Principal, idempotency_key: str | None, credential: IssuedCredential
) -> None:
    """Log a device of the caller's own, paired under ``credential`` (a script's key, a
    passkey); refused as the door refuses."""
    answer = await ctx.appender.append(
        caller.workspace_id,
        caller.credential_id,
        caller.actor,
        request_key(idempotency_key),
        [
            {
                "type": "device.paired",
                "device_id": credential.credential_id,
                "participant_id": caller.participant_id,
                "kind": credential.kind,
            }
        ],
        [credential],
    )
    refusal(answer)


@router.post("/sessions", status_code=201)
async def open_session(body: SessionIn, request: Request, ctx: Ctx) -> Session:
    """A device signs ``chips-session-v1\\n<device>\\n<ts>\\n<nonce>`` for a session of
    fifteen minutes. A replayed nonce, a time off the clock, another key's signature, or
    a revoked device are refused."""
    try:
        check_time(body.ts, time.time())
    except DeviceRefusal as exc:
        raise ChipsError(exc.code, exc.message) from None
    cr = t.credentials.c
    async with ctx.engine.connect() as conn:
        row = (
            await conn.execute(
                select(cr.public_key, cr.revoked_at).where(
                    and_(cr.id == body.device_id, cr.public_key.is_not(None))
                )
            )
        ).first()
    if row is None or row.revoked_at is not None:
        raise ChipsError("unauthorized", "this device is not paired, or was revoked")
    try:
        check_signature(row.public_key, body.device_id, body.ts, body.nonce, body.signature)
    except DeviceRefusal as exc:
        raise ChipsError(exc.code, exc.message) from None
    if not await newer_than_last(ctx, body.device_id, body.ts):
        raise ChipsError(
            "replayed",
            "that signed request is not newer than this device's last one: sign a fresh one "
            "(if this keeps happening, this device's clock went back)",
        )
    prefix = ctx.settings.redis_prefix
    try:
        fresh = await ctx.redis.set(
            f"{prefix}:nonce:{body.device_id}:{body.nonce}", "1", nx=True, ex=NONCE_TTL
        )
        await ctx.redis.set(
            seen_key(prefix, body.device_id),
            datetime.now(UTC).isoformat(timespec="seconds"),
        )
    except (RedisError, OSError):
        raise ChipsError(
            "unavailable", "sessions cannot be opened right now; try again shortly"
        ) from None
    if not fresh:
        raise ChipsError("replayed", "that signed request was sent before: sign a fresh one")
    token, expires = issue_session(ctx.settings.signing_key, body.device_id)
    return Session(token=token, expires_at=expires, expires_in=expires - int(time.time()))


async def newer_than_last(ctx: Context, device_id: str, ts: int) -> bool:
    """Keep ``ts`` as the device's newest signed time if it is newer than the one kept;
    else it is a replay (or a clock gone back), on whichever gateway it arrives. One
    statement, so two gateways given the same bytes at once let one through."""
    ds = t.device_signatures
    stmt = (
        pg_insert(ds)
        .values(device_id=device_id, last_ts=ts, signed_at=datetime.now(UTC))
        .on_conflict_do_update(
            index_elements=[ds.c.device_id],
            set_={"last_ts": ts, "signed_at": datetime.now(UTC)},
            where=ds.c.last_ts < ts,
        )
        .returning(ds.c.device_id)
    )
    async with ctx.engine.begin() as conn:
        return (await conn.execute(stmt)).first() is not None


@router.get("/devices")
async def list_devices(
    ctx: Ctx, caller: Caller, participant_id: Annotated[str | None, Query()] = None
) -> Devices:
    """The caller's devices and keys still in use; an owner or admin may ask another
    person's."""
    need_person(caller)
    whose = participant_id or caller.participant_id
    if whose != caller.participant_id and caller.role not in ADMINS:
        raise ChipsError("forbidden", "only a workspace owner or admin sees another's devices")
    cr = t.credentials.c
    async with ctx.engine.connect() as conn:
        rows = (
            await conn.execute(
                select(cr.id, cr.kind, cr.name, cr.user_agent, cr.created_at, cr.expires_at)
                .where(
                    and_(
                        cr.workspace_id == caller.workspace_id,
                        cr.participant_id == whose,
                        cr.revoked_at.is_(None),
                    )
                )
                .order_by(cr.created_at)
            )
        ).all()
    seen: list[bytes | str | None] = [None] * len(rows)
    if rows:
        # Redis away costs "last seen", nothing else.
        with contextlib.suppress(RedisError, OSError):
            seen = await ctx.redis.mget([seen_key(ctx.settings.redis_prefix, r.id) for r in rows])
    devices = [
        Device(
            id=r.id,
            kind=r.kind or "token",
            name=r.name or ("Token" if (r.kind or "token") == "token" else r.kind),
            user_agent=r.user_agent,
            created_at=r.created_at.isoformat(),
            expires_at=r.expires_at.isoformat() if r.expires_at else None,
            last_seen=last.decode() if isinstance(last, bytes) else last,
            current=r.id == caller.credential_id,
        )
        for r, last in zip(rows, seen, strict=True)
    ]
    return Devices(participant_id=whose, devices=devices)


@router.delete("/devices/{device_id}")
async def revoke_device(
    device_id: str,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> DeviceRevoked:
    """Revoke a device or API key: its sockets close on every gateway now."""
    need_person(caller)
    await check_write_rate(ctx, caller)
    cr = t.credentials.c
    async with ctx.engine.connect() as conn:
        owner = (
            await conn.execute(
                select(cr.participant_id).where(
                    and_(cr.id == device_id, cr.workspace_id == caller.workspace_id)
                )
            )
        ).scalar()
    if owner is None:
        raise ChipsError("not_found", "no such device in this workspace")
    answer = await ctx.appender.append(
        caller.workspace_id,
        caller.credential_id,
        caller.actor,
        request_key(idempotency_key),
        [{"type": "device.revoked", "device_id": device_id, "participant_id": owner}],
    )
    refusal(answer)
    await ctx.sockets.notify(str(owner), REVOKED_WHY, credential_id=device_id)
    return DeviceRevoked(device_id=device_id, seq=answer.seqs[-1])
