"""Invites and pairing codes (docs/adr/0125).

An owner or admin invites somebody (``POST /v1/invites``) and is answered a one-time link;
whoever opens it pairs their browser (``POST /v1/invites/accept`` with the public key of a
key pair it made and cannot export). A paired device asks for a pairing code
(``POST /v1/pairing-codes``) to pair a further one: an invite for its own person, typed by
hand. ``pair_through`` is how an invite's row pairs a device, also for a sign-in through the
team's identity provider (``oidc``).
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field
from sqlalchemy import and_, select
from starlette.convertors import StringConvertor, register_url_convertor

from chips_common.append import Actor, InviteSecret, IssuedCredential
from chips_common.db import tables as t
from chips_common.events import JsonObject
from chips_common.ids import new_id
from chips_common.rules.devices import DeviceRefusal, check_public_key
from chips_common.tokens import hash_token
from chips_gateway.answers.people import (
    Invite,
    InviteAccepted,
    InviteMade,
    InvitePreview,
    Invites,
    InviteWithdrawn,
    PairingCode,
)
from chips_gateway.api.identity import request_key
from chips_gateway.api.people import ADMINS, Name, need_person, refusal
from chips_gateway.context import Caller, Context, Ctx, IdempotencyKey, check_write_rate
from chips_gateway.errors import ChipsError


class InviteIdConvertor(StringConvertor):
    """An invite's id (``inv_…``) in a path, so ``/v1/invites/accept`` and ``…/preview``
    are never read as an invite to withdraw (nor advertised in their ``Allow``)."""

    regex = "inv_[^/]+"


register_url_convertor("invite_id", InviteIdConvertor())

router = APIRouter(prefix="/v1")

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


@router.post("/invites", status_code=201)
async def create_invite(
    body: InviteIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> InviteMade:
    """An owner or admin invites somebody: a one-time link, shown once."""
    need_person(caller)
    await check_write_rate(ctx, caller)
    secret = f"chips_iv_{secrets.token_urlsafe(32)}"
    invite_id = new_id("inv")
    expires_at = (datetime.now(UTC) + timedelta(days=body.expires_in_days)).isoformat(
        timespec="seconds"
    )
    event: JsonObject = {
        "type": "invite.created",
        "invite_id": invite_id,
        "name": body.name,
        "role": body.role,
        "expires_at": expires_at,
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
    return InviteMade(
        invite_id=invite_id,
        name=body.name,
        role=body.role,
        expires_at=expires_at,
        url=invite_link(ctx, secret),
        seq=answer.seqs[-1],
    )


@router.get("/invites")
async def list_invites(ctx: Ctx, caller: Caller) -> Invites:
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
    return Invites(
        invites=[
            Invite(
                id=r.id,
                name=r.name,
                email=r.email,
                role=r.role,
                invited_by=r.invited_by,
                created_at=r.created_at.isoformat(),
                expires_at=r.expires_at.isoformat(),
            )
            for r in rows
        ]
    )


@router.delete("/invites/{invite_id:invite_id}")
async def withdraw_invite(
    invite_id: str,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> InviteWithdrawn:
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
    return InviteWithdrawn(invite_id=invite_id, seq=answer.seqs[-1])


@router.post("/invites/preview")
async def preview_invite(body: SecretIn, ctx: Ctx) -> InvitePreview:
    """What an invite link is for, before it is used: no sign-in needed, nothing changes."""
    row = await find_invite(ctx, body.invite)
    return InvitePreview(
        workspace_name=row.workspace_name,
        name=row.name,
        role=row.role,
        expires_at=row.expires_at.isoformat(),
        pairing=row.participant_id is not None,
    )


@router.post("/invites/accept", status_code=201)
async def accept_invite(body: AcceptIn, request: Request, ctx: Ctx) -> InviteAccepted:
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
) -> InviteAccepted:
    """Use an invite (or pairing code) row whose secret's hash the caller presents: the
    device holding the private half of ``public_key`` is paired, and the person the invite
    is for comes in first when they are new. Also how a sign-in through the team's
    identity provider pairs a browser (docs/adr/0135)."""
    device_id = new_id("crd")
    person_id = row.participant_id or new_id("usr")
    events: list[JsonObject] = []
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
    return InviteAccepted(
        workspace_id=row.workspace_id,
        workspace_name=row.workspace_name,
        participant_id=person_id,
        name=row.name,
        device_id=device_id,
    )


@router.post("/pairing-codes", status_code=201)
async def pairing_code(
    ctx: Ctx, caller: Caller, idempotency_key: IdempotencyKey = None
) -> PairingCode:
    """A short code, valid for minutes, that pairs a further device of the caller's."""
    need_person(caller)
    await check_write_rate(ctx, caller)
    code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(8))
    expires_at = (datetime.now(UTC) + timedelta(minutes=PAIRING_MINUTES)).isoformat(
        timespec="seconds"
    )
    event: JsonObject = {
        "type": "invite.created",
        "invite_id": new_id("inv"),
        "name": caller.name,
        "role": caller.role,
        "expires_at": expires_at,
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
    return PairingCode(code=shown, url=invite_link(ctx, shown), expires_at=expires_at)
