"""Invites, paired devices, sessions and API keys (docs/adr/0125).

An owner or admin invites somebody (``POST /v1/invites``) and is answered a one-time link;
whoever opens it pairs their browser (``POST /v1/invites/accept`` with the public key of a
key pair it made and cannot export). From then on the device signs a fresh challenge for
a short-lived session (``POST /v1/sessions``), which it sends as a bearer token. A paired
device asks for a pairing code (``POST /v1/pairing-codes``) to pair a further one.
A person lists their devices and keys and revokes one (``DELETE /v1/devices/{id}``): its
sockets close on every gateway at once, and its next request is refused.

Every act that changes who may sign in is an event decided at the door; a refusal here
or there is answered with a code and a sentence and logged as nothing. The secrets (an
invite's, an API key's) are shown once, in the answer, and kept only as hashes.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field
from redis.exceptions import RedisError
from sqlalchemy import and_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from starlette.convertors import StringConvertor, register_url_convertor

from chips_common.append import Actor, AppendAnswer, InviteSecret, IssuedCredential
from chips_common.db import projector_tables as pt
from chips_common.db import tables as t
from chips_common.events.people import known_time_zone
from chips_common.ids import new_id, new_token
from chips_common.rules.devices import (
    NONCE_TTL,
    DeviceRefusal,
    check_public_key,
    check_signature,
    check_time,
    issue_session,
)
from chips_common.tokens import hash_token
from chips_gateway.api.identity import request_key
from chips_gateway.api.reads import wait_for_checkpoint
from chips_gateway.auth import Principal
from chips_gateway.context import Caller, Context, Ctx, IdempotencyKey, check_write_rate
from chips_gateway.errors import ChipsError
from chips_gateway.sockets import DEACTIVATED_WHY, REVOKED_WHY, seen_key


class InviteIdConvertor(StringConvertor):
    """An invite's id (``inv_…``) in a path, so ``/v1/invites/accept`` and ``…/preview``
    are never read as an invite to withdraw (nor advertised in their ``Allow``)."""

    regex = "inv_[^/]+"


register_url_convertor("invite_id", InviteIdConvertor())

router = APIRouter(prefix="/v1")

Name = Annotated[str, Field(min_length=1, max_length=80)]
ADMINS = ("owner", "admin")
PAIRING_MINUTES = 10
# A pairing code is typed by hand: eight letters and digits nobody misreads.
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"


class InviteIn(BaseModel):
    name: Name
    email: str | None = Field(default=None, max_length=200)
    role: Literal["owner", "admin", "member", "guest"] = "member"
    expires_in_days: float = Field(default=7, gt=0, le=30)
    # A person already here, invited back in (after a reactivation).
    participant_id: str | None = Field(default=None, max_length=100)


class SecretIn(BaseModel):
    invite: str = Field(min_length=4, max_length=200)


class AcceptIn(SecretIn):
    public_key: str = Field(min_length=40, max_length=400)
    device_name: str = Field(default="Browser", min_length=1, max_length=120)
    kind: Literal["browser", "cli"] = "browser"


class SessionIn(BaseModel):
    device_id: str = Field(max_length=100)
    ts: int
    nonce: str = Field(min_length=16, max_length=64)
    signature: str = Field(min_length=40, max_length=200)


class PersonChange(BaseModel):
    role: Literal["admin", "member", "guest"] | None = None
    active: bool | None = None
    # Deactivating somebody who owns group rooms: the active person who takes them over.
    rooms_to: str | None = Field(default=None, min_length=1, max_length=100)
    # One's own only (the door refuses another's): PATCH /v1/me says the same.
    name: str | None = Field(default=None, min_length=1, max_length=80)
    time_zone: str | None = Field(default=None, min_length=1, max_length=64)


class ProfileIn(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=80)
    time_zone: str | None = Field(default=None, min_length=1, max_length=64)


class ApiKeyIn(BaseModel):
    name: Name
    expires_in_days: float = Field(default=90, gt=0, le=366)


def refusal(answer: AppendAnswer) -> None:
    if not answer.ok:
        raise ChipsError(
            answer.code or "invalid_event", answer.message or "refused", field=answer.field
        )


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


def invite_link(ctx: Context, secret: str) -> str:
    return f"{ctx.settings.gateway_url}/#/invite/{secret}"


def normal_code(secret: str) -> str:
    """A pairing code as typed (any case, with or without its dash), or an invite's
    secret as it is."""
    bare = secret.strip().replace("-", "").upper()
    if len(bare) == 8 and all(c in CODE_ALPHABET for c in bare):
        return bare
    return secret.strip()


async def find_invite(ctx: Context, secret: str) -> Any:
    """The invite a secret opens, with its workspace's name, or refused as the door would
    (the door decides again when it is used)."""
    iv, w = t.invites.c, t.workspaces.c
    async with ctx.engine.connect() as conn:
        row = (
            await conn.execute(
                select(t.invites, w.name.label("workspace_name"))
                .select_from(t.invites.join(t.workspaces, w.id == iv.workspace_id))
                .where(iv.secret_hash == hash_token(normal_code(secret)))
            )
        ).first()
    if row is None:
        raise ChipsError(
            "invalid_invite", "that invite link is not one Chips made; ask for a new one"
        )
    if row.state == "used":
        raise ChipsError("invite_used", "that invite link was used already; ask for a new one")
    if row.state == "withdrawn":
        raise ChipsError("invite_withdrawn", "that invite was withdrawn; ask for a new one")
    if row.expires_at <= datetime.now(UTC):
        raise ChipsError("invite_expired", "that invite link has expired; ask for a new one")
    return row


def need_person(caller: Principal) -> None:
    if caller.kind != "person":
        raise ChipsError("forbidden", "only a person has devices and invites")


@router.post("/invites", status_code=201)
async def create_invite(
    body: InviteIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> dict[str, Any]:
    """An owner or admin invites somebody: a one-time link, shown once."""
    need_person(caller)
    await check_write_rate(ctx, caller)
    secret = f"chips_iv_{secrets.token_urlsafe(32)}"
    invite_id = new_id("inv")
    expires = datetime.now(UTC) + timedelta(days=body.expires_in_days)
    event = {
        "type": "invite.created",
        "invite_id": invite_id,
        "name": body.name,
        "role": body.role,
        "expires_at": expires.isoformat(timespec="seconds"),
    }
    if body.participant_id:
        event["participant_id"] = body.participant_id
    answer = await ctx.appender.append(
        caller.workspace_id,
        caller.credential_id,
        caller.actor,
        request_key(idempotency_key),
        [event],
        invite=InviteSecret(secret_hash=hash_token(secret), email=body.email),
    )
    refusal(answer)
    return {
        "invite_id": invite_id,
        "name": body.name,
        "role": body.role,
        "expires_at": event["expires_at"],
        "url": invite_link(ctx, secret),
        "seq": answer.seqs[-1],
    }


@router.get("/invites")
async def list_invites(ctx: Ctx, caller: Caller) -> dict[str, Any]:
    """The workspace's invites still open (an owner's or admin's read)."""
    if caller.kind != "person" or caller.role not in ADMINS:
        raise ChipsError("forbidden", "only a workspace owner or admin sees the invites")
    iv = t.invites.c
    async with ctx.engine.connect() as conn:
        rows = (
            await conn.execute(
                select(
                    iv.id, iv.name, iv.email, iv.role, iv.invited_by, iv.created_at, iv.expires_at
                )
                .where(
                    and_(
                        iv.workspace_id == caller.workspace_id,
                        iv.state == "pending",
                        iv.participant_id.is_(None),
                        iv.expires_at > datetime.now(UTC),
                    )
                )
                .order_by(iv.created_at)
            )
        ).all()
    return {
        "invites": [
            {
                "id": r.id,
                "name": r.name,
                "email": r.email,
                "role": r.role,
                "invited_by": r.invited_by,
                "created_at": r.created_at.isoformat(),
                "expires_at": r.expires_at.isoformat(),
            }
            for r in rows
        ]
    }


@router.delete("/invites/{invite_id:invite_id}")
async def withdraw_invite(
    invite_id: str,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> dict[str, Any]:
    need_person(caller)
    await check_write_rate(ctx, caller)
    answer = await ctx.appender.append(
        caller.workspace_id,
        caller.credential_id,
        caller.actor,
        request_key(idempotency_key),
        [{"type": "invite.withdrawn", "invite_id": invite_id}],
    )
    refusal(answer)
    return {"invite_id": invite_id, "seq": answer.seqs[-1]}


@router.post("/invites/preview")
async def preview_invite(body: SecretIn, ctx: Ctx) -> dict[str, Any]:
    """What an invite link is for, before it is used: no sign-in needed, nothing changes."""
    row = await find_invite(ctx, body.invite)
    return {
        "workspace_name": row.workspace_name,
        "name": row.name,
        "role": row.role,
        "expires_at": row.expires_at.isoformat(),
        "pairing": row.participant_id is not None,
    }


@router.post("/invites/accept", status_code=201)
async def accept_invite(body: AcceptIn, request: Request, ctx: Ctx) -> dict[str, Any]:
    """Use an invite link (or a pairing code): this device is paired, holding the private
    half of ``public_key``; a new person comes in as the invite said."""
    try:
        check_public_key(body.public_key)
    except DeviceRefusal as exc:
        raise ChipsError(exc.code, exc.message) from None
    row = await find_invite(ctx, body.invite)
    return await pair_through(
        ctx,
        row,
        hash_token(normal_code(body.invite)),
        public_key=body.public_key,
        device_name=body.device_name,
        kind=body.kind,
        user_agent=request.headers.get("user-agent"),
    )


async def pair_through(
    ctx: Context,
    row: Any,
    secret_hash: str,
    *,
    public_key: str,
    device_name: str,
    kind: str,
    user_agent: str | None,
) -> dict[str, Any]:
    """Use an invite (or pairing code) row whose secret's hash the caller presents: the
    device holding the private half of ``public_key`` is paired, and the person the invite
    is for comes in first when they are new. Also how a sign-in through the team's
    identity provider pairs a browser (docs/adr/0135)."""
    device_id = new_id("crd")
    person_id = row.participant_id or new_id("usr")
    events: list[dict[str, Any]] = []
    if row.participant_id is None:
        events.append(
            {
                "type": "participant.joined",
                "participant_id": person_id,
                "kind": "person",
                "name": row.name,
                "role": row.role,
                "invite_id": row.id,
            }
        )
    events.append(
        {
            "type": "device.paired",
            "device_id": device_id,
            "participant_id": person_id,
            "kind": kind,
            "invite_id": row.id,
        }
    )
    credential = IssuedCredential(
        credential_id=device_id,
        participant_id=person_id,
        kind=kind,
        name=device_name,
        public_key=public_key,
        user_agent=(user_agent or "")[:400] or None,
    )
    answer = await ctx.appender.append(
        row.workspace_id,
        device_id,
        Actor(kind="person", id=person_id),
        f"accept-{row.id}-{device_id}",
        events,
        [credential],
        invite=InviteSecret(secret_hash=secret_hash),
    )
    refusal(answer)
    return {
        "workspace_id": row.workspace_id,
        "workspace_name": row.workspace_name,
        "participant_id": person_id,
        "name": row.name,
        "device_id": device_id,
    }


@router.post("/pairing-codes", status_code=201)
async def pairing_code(
    ctx: Ctx, caller: Caller, idempotency_key: IdempotencyKey = None
) -> dict[str, Any]:
    """A short code, valid for minutes, that pairs a further device of the caller's."""
    need_person(caller)
    await check_write_rate(ctx, caller)
    code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(8))
    expires = datetime.now(UTC) + timedelta(minutes=PAIRING_MINUTES)
    event = {
        "type": "invite.created",
        "invite_id": new_id("inv"),
        "name": caller.name,
        "role": caller.role,
        "expires_at": expires.isoformat(timespec="seconds"),
        "participant_id": caller.participant_id,
    }
    answer = await ctx.appender.append(
        caller.workspace_id,
        caller.credential_id,
        caller.actor,
        request_key(idempotency_key),
        [event],
        invite=InviteSecret(secret_hash=hash_token(code)),
    )
    refusal(answer)
    shown = f"{code[:4]}-{code[4:]}"
    return {"code": shown, "url": invite_link(ctx, shown), "expires_at": event["expires_at"]}


@router.post("/sessions", status_code=201)
async def open_session(body: SessionIn, request: Request, ctx: Ctx) -> dict[str, Any]:
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
    return {"token": token, "expires_at": expires, "expires_in": expires - int(time.time())}


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
) -> dict[str, Any]:
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
    seen: list[Any] = [None] * len(rows)
    if rows:
        # Redis away costs "last seen", nothing else.
        with contextlib.suppress(RedisError, OSError):
            seen = await ctx.redis.mget([seen_key(ctx.settings.redis_prefix, r.id) for r in rows])
    devices = []
    for r, last in zip(rows, seen, strict=True):
        devices.append(
            {
                "id": r.id,
                "kind": r.kind or "token",
                "name": r.name or ("Token" if (r.kind or "token") == "token" else r.kind),
                "user_agent": r.user_agent,
                "created_at": r.created_at.isoformat(),
                "expires_at": r.expires_at.isoformat() if r.expires_at else None,
                "last_seen": last.decode() if isinstance(last, bytes) else last,
                "current": r.id == caller.credential_id,
            }
        )
    return {"participant_id": whose, "devices": devices}


@router.delete("/devices/{device_id}")
async def revoke_device(
    device_id: str,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> dict[str, Any]:
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
    return {"device_id": device_id, "seq": answer.seqs[-1]}


@router.patch("/people/{participant_id}")
async def change_person(
    participant_id: str,
    body: PersonChange,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> dict[str, Any]:
    """An owner or admin changes a person's role, or deactivates (every device, key and
    harness of theirs signed out, their sockets closed, the group rooms they own handed to
    ``rooms_to``) or reactivates them."""
    need_person(caller)
    await check_write_rate(ctx, caller)
    event: dict[str, Any] = {"type": "person.updated", "participant_id": participant_id}
    event.update(body.model_dump(exclude_none=True))
    answer = await ctx.appender.append(
        caller.workspace_id,
        caller.credential_id,
        caller.actor,
        request_key(idempotency_key),
        [event],
    )
    refusal(answer)
    # The person.updated, then any membership.added of the heir's to a room it was not in.
    logged = next((e for e in answer.events if e.get("type") == "person.updated"), {})
    if body.active is False:
        await ctx.sockets.notify(participant_id, DEACTIVATED_WHY)
        for harness_id in logged.get("disconnected", []):
            await ctx.sockets.notify(str(harness_id), DEACTIVATED_WHY)
    return {
        "participant_id": participant_id,
        "disconnected": logged.get("disconnected", []),
        "rooms_handed": logged.get("rooms_handed", []),
        "rooms_to": logged.get("rooms_to"),
        "seq": answer.seqs[-1],
    }


async def profile(ctx: Context, caller: Principal) -> dict[str, Any]:
    # From the read model once it holds everything logged before this call, so a change
    # made a moment ago is read back.
    await wait_for_checkpoint(ctx, caller.workspace_id, await ctx.reader.head(caller.workspace_id))
    p = pt.rm_participants.c
    async with ctx.engine.connect() as conn:
        row = (
            await conn.execute(
                select(p.name, p.role, p.time_zone).where(
                    and_(p.id == caller.participant_id, p.workspace_id == caller.workspace_id)
                )
            )
        ).first()
    return {
        "participant_id": caller.participant_id,
        "workspace_id": caller.workspace_id,
        "kind": caller.kind,
        "name": row.name if row is not None else caller.name,
        "role": caller.role,
        "time_zone": row.time_zone if row is not None else None,
    }


@router.get("/me")
async def get_me(ctx: Ctx, caller: Caller) -> dict[str, Any]:
    """Who the caller is: their name, role and time zone (none until they say one)."""
    return await profile(ctx, caller)


@router.patch("/me")
async def change_me(
    body: ProfileIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> dict[str, Any]:
    """A person renames themselves or sets their time zone (an IANA name): one
    ``person.updated``, which says the name it replaces."""
    need_person(caller)
    await check_write_rate(ctx, caller)
    change = body.model_dump(exclude_none=True)
    if not change:
        raise ChipsError("invalid_event", "say a new name or a time zone", field="name")
    if body.name is not None and not body.name.strip():
        raise ChipsError("invalid_event", "a name has a letter at least", field="name")
    if body.time_zone is not None and not known_time_zone(body.time_zone):
        raise ChipsError(
            "invalid_event",
            f"{body.time_zone!r} is not a time zone's IANA name (like Europe/Lisbon)",
            field="time_zone",
        )
    answer = await ctx.appender.append(
        caller.workspace_id,
        caller.credential_id,
        caller.actor,
        request_key(idempotency_key),
        [{"type": "person.updated", "participant_id": caller.participant_id, **change}],
    )
    refusal(answer)
    logged = answer.events[-1] if answer.events else {}
    return {
        "participant_id": caller.participant_id,
        "name": logged.get("name"),
        "previous_name": logged.get("previous_name"),
        "time_zone": logged.get("time_zone"),
        "seq": answer.seqs[-1],
    }


@router.post("/api-keys", status_code=201)
async def create_api_key(
    body: ApiKeyIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> dict[str, Any]:
    """A named, expiring key for a script, shown once; listed and revoked as a device."""
    need_person(caller)
    await check_write_rate(ctx, caller)
    token = new_token("pt")
    key_id = new_id("crd")
    expires = datetime.now(UTC) + timedelta(days=body.expires_in_days)
    await pair_own(
        ctx,
        caller,
        idempotency_key,
        IssuedCredential(
            credential_id=key_id,
            participant_id=caller.participant_id,
            token_hash=hash_token(token),
            kind="api_key",
            name=body.name,
            expires_at=expires,
        ),
    )
    return {
        "id": key_id,
        "name": body.name,
        "token": token,
        "expires_at": expires.isoformat(timespec="seconds"),
    }
