"""Passkeys: a device whose key is a WebAuthn credential (docs/adr/0145).

A person on a device already paired registers a passkey (``POST /v1/passkeys/options``,
then ``POST /v1/passkeys`` with what the authenticator made): it becomes a device of
theirs, kind ``passkey``, listed and revoked as any. Later, in any browser that holds it,
the passkey answers a fresh challenge (``POST /v1/passkeys/challenge``, then
``POST /v1/passkeys/sign-in``) for the same fifteen-minute session a device's signed
exchange earns; the app asks it again when the session runs out.

Each challenge is the gateway's, kept in Redis for two minutes and forgotten as it is
used: an answer sent twice, or to a challenge never given, is refused. The
authenticator's count only grows (a copied passkey shows as a count gone back). The
relying party is this deployment's public address (``CHIPS_PUBLIC_URL``): its host is
the passkey's RP ID, its origin the only one taken. Refusals are a code and a sentence,
logged as nothing.
"""

from __future__ import annotations

import contextlib
import json
import time
from datetime import UTC, datetime
from typing import NotRequired, TypedDict
from urllib.parse import urlsplit

from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from fastapi import APIRouter, Request
from pydantic import BaseModel, Field
from redis.exceptions import RedisError
from sqlalchemy import and_, insert, select, update
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import (
    base64url_to_bytes,
    bytes_to_base64url,
    decode_credential_public_key,
    decoded_public_key_to_cryptography,
    parse_client_data_json,
)
from webauthn.helpers.cose import COSEAlgorithmIdentifier
from webauthn.helpers.exceptions import (
    InvalidAuthenticationResponse,
    InvalidCBORData,
    InvalidJSONStructure,
    InvalidRegistrationResponse,
)
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from chips_common.append import IssuedCredential
from chips_common.db import tables as t
from chips_common.events import JsonObject
from chips_common.ids import new_id
from chips_common.rules.devices import b64encode, issue_session
from chips_gateway.answers.people import PasskeyAdded, PasskeyOptions, PasskeySession
from chips_gateway.api.devices import pair_own
from chips_gateway.api.people import need_person
from chips_gateway.context import Caller, Context, Ctx, IdempotencyKey, check_write_rate
from chips_gateway.errors import ChipsError
from chips_gateway.sockets import seen_key

router = APIRouter(prefix="/v1")

CHALLENGE_SECONDS = 120
# ES256 only: what every platform authenticator and security key offers, and the one the
# device rules already read (a P-256 public key).
ALGORITHMS = [COSEAlgorithmIdentifier.ECDSA_SHA_256]
BAD_WEBAUTHN = (
    InvalidAuthenticationResponse,
    InvalidRegistrationResponse,
    InvalidCBORData,
    InvalidJSONStructure,
    ValueError,
    KeyError,
    TypeError,
)


class PasskeyIn(BaseModel):
    # What navigator.credentials.create() gave, as JSON (ids and buffers base64url),
    # handed to the WebAuthn library as it came.
    credential: JsonObject
    name: str = Field(default="Passkey", min_length=1, max_length=120)


class AssertionIn(BaseModel):
    # What navigator.credentials.get() gave, as JSON (ids and buffers base64url).
    credential: JsonObject


class KeptChallenge(TypedDict):
    """What a challenge keeps in Redis until it is answered: what it is for, and for a
    registration who asked."""

    purpose: str
    participant_id: NotRequired[str]
    device_id: NotRequired[str]


def relying_party(ctx: Context) -> tuple[str, str]:
    """This deployment's RP ID (its host) and the one origin a passkey answer may come
    from (its public address)."""
    url = urlsplit(ctx.settings.gateway_url)
    return url.hostname or "localhost", f"{url.scheme}://{url.netloc}"


def challenge_key(ctx: Context, challenge: bytes) -> str:
    return f"{ctx.settings.redis_prefix}:passkey:{bytes_to_base64url(challenge)}"


async def keep_challenge(ctx: Context, challenge: bytes, kept: KeptChallenge) -> None:
    try:
        await ctx.redis.set(challenge_key(ctx, challenge), json.dumps(kept), ex=CHALLENGE_SECONDS)
    except (RedisError, OSError):
        raise ChipsError(
            "unavailable", "passkeys cannot be used right now; try again shortly"
        ) from None


async def take_challenge(
    ctx: Context, credential: JsonObject, purpose: str
) -> tuple[bytes, KeptChallenge]:
    """The challenge an answer is for, once: forgotten as it is read."""
    response = credential.get("response")
    data = response.get("clientDataJSON") if isinstance(response, dict) else None
    try:
        if not isinstance(data, str):
            raise TypeError("no clientDataJSON")
        client = parse_client_data_json(base64url_to_bytes(data))
    except BAD_WEBAUTHN:
        raise ChipsError("bad_signature", "that is not a passkey's answer") from None
    try:
        raw = await ctx.redis.getdel(challenge_key(ctx, client.challenge))
    except (RedisError, OSError):
        raise ChipsError(
            "unavailable", "passkeys cannot be used right now; try again shortly"
        ) from None
    kept: KeptChallenge | None = json.loads(raw) if raw is not None else None
    if kept is None or kept.get("purpose") != purpose:
        raise ChipsError(
            "replayed",
            "that passkey answer is for a challenge used already, too old, or never given: "
            "try again",
        )
    return client.challenge, kept


@router.post("/passkeys/options")
async def passkey_options(ctx: Ctx, caller: Caller) -> PasskeyOptions:
    """What the browser asks its authenticator to make: a passkey for this person here."""
    need_person(caller)
    await check_write_rate(ctx, caller)
    rp_id, _ = relying_party(ctx)
    cr, pk = t.credentials.c, t.passkeys.c
    async with ctx.engine.connect() as conn:
        mine = (
            await conn.execute(
                select(pk.credential_id)
                .select_from(t.passkeys.join(t.credentials, cr.id == pk.device_id))
                .where(and_(cr.participant_id == caller.participant_id, cr.revoked_at.is_(None)))
            )
        ).all()
    options = generate_registration_options(
        rp_id=rp_id,
        rp_name="Chips",
        user_name=caller.name or caller.participant_id,
        user_display_name=caller.name or caller.participant_id,
        user_id=caller.participant_id.encode(),
        timeout=CHALLENGE_SECONDS * 1000,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.REQUIRED,
            user_verification=UserVerificationRequirement.PREFERRED,
        ),
        exclude_credentials=[
            PublicKeyCredentialDescriptor(id=base64url_to_bytes(r.credential_id)) for r in mine
        ],
        supported_pub_key_algs=ALGORITHMS,
    )
    await keep_challenge(
        ctx,
        options.challenge,
        {
            "purpose": "register",
            "participant_id": caller.participant_id,
            "device_id": caller.credential_id,
        },
    )
    return PasskeyOptions(options=json.loads(options_to_json(options)))


@router.post("/passkeys", status_code=201)
async def register_passkey(
    body: PasskeyIn,
    request: Request,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> PasskeyAdded:
    """The passkey the authenticator made: a device of the caller's from now on."""
    need_person(caller)
    await check_write_rate(ctx, caller)
    challenge, kept = await take_challenge(ctx, body.credential, "register")
    if kept.get("participant_id") != caller.participant_id:
        raise ChipsError("replayed", "that passkey was asked for by somebody else: try again")
    rp_id, origin = relying_party(ctx)
    try:
        made = verify_registration_response(
            credential=body.credential,
            expected_challenge=challenge,
            expected_rp_id=rp_id,
            expected_origin=origin,
            supported_pub_key_algs=ALGORITHMS,
        )
        key = decoded_public_key_to_cryptography(
            decode_credential_public_key(made.credential_public_key)
        )
        spki = key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    except BAD_WEBAUTHN as exc:
        raise ChipsError(
            "bad_signature", f"that passkey was not made for Chips here: {exc}"
        ) from None
    credential_id = bytes_to_base64url(made.credential_id)
    async with ctx.engine.connect() as conn:
        known = (
            await conn.execute(
                select(t.passkeys.c.device_id).where(t.passkeys.c.credential_id == credential_id)
            )
        ).first()
    if known is not None:
        raise ChipsError("invalid_event", "that passkey is one of your devices already")
    device_id = new_id("crd")
    await pair_own(
        ctx,
        caller,
        idempotency_key,
        IssuedCredential(
            credential_id=device_id,
            participant_id=caller.participant_id,
            kind="passkey",
            name=body.name,
            public_key=b64encode(spki),
            user_agent=(request.headers.get("user-agent") or "")[:400] or None,
        ),
    )
    async with ctx.engine.begin() as conn:
        await conn.execute(
            insert(t.passkeys).values(
                credential_id=credential_id,
                device_id=device_id,
                workspace_id=caller.workspace_id,
                cose_key=bytes_to_base64url(made.credential_public_key),
                sign_count=made.sign_count,
                created_at=datetime.now(UTC),
            )
        )
    return PasskeyAdded(device_id=device_id, name=body.name, credential_id=credential_id)


@router.post("/passkeys/challenge", status_code=201)
async def passkey_challenge(ctx: Ctx) -> PasskeyOptions:
    """A fresh challenge for a passkey to answer: no sign-in needed, nothing changes."""
    rp_id, _ = relying_party(ctx)
    options = generate_authentication_options(
        rp_id=rp_id,
        timeout=CHALLENGE_SECONDS * 1000,
        user_verification=UserVerificationRequirement.PREFERRED,
    )
    await keep_challenge(ctx, options.challenge, {"purpose": "sign-in"})
    return PasskeyOptions(options=json.loads(options_to_json(options)))


@router.post("/passkeys/sign-in", status_code=201)
async def passkey_sign_in(body: AssertionIn, ctx: Ctx) -> PasskeySession:
    """A passkey's answer to a challenge of ours: a session for its device, as a signed
    exchange earns one. An unknown or revoked passkey, an answer sent twice, another
    site's or a count gone back are refused."""
    challenge, _ = await take_challenge(ctx, body.credential, "sign-in")
    credential_id = str(body.credential.get("id") or "")
    pk, cr, w = t.passkeys.c, t.credentials.c, t.workspaces.c
    async with ctx.engine.connect() as conn:
        row = (
            await conn.execute(
                select(
                    pk.device_id,
                    pk.cose_key,
                    pk.sign_count,
                    cr.participant_id,
                    cr.workspace_id,
                    cr.revoked_at,
                    w.name.label("workspace_name"),
                )
                .select_from(
                    t.passkeys.join(t.credentials, cr.id == pk.device_id).join(
                        t.workspaces, w.id == cr.workspace_id
                    )
                )
                .where(pk.credential_id == credential_id)
            )
        ).first()
    if row is None or row.revoked_at is not None:
        raise ChipsError(
            "unauthorized", "that passkey is not one Chips knows here, or it was revoked"
        )
    rp_id, origin = relying_party(ctx)
    try:
        checked = verify_authentication_response(
            credential=body.credential,
            expected_challenge=challenge,
            expected_rp_id=rp_id,
            expected_origin=origin,
            credential_public_key=base64url_to_bytes(row.cose_key),
            credential_current_sign_count=row.sign_count,
        )
    except BAD_WEBAUTHN as exc:
        raise ChipsError("bad_signature", f"that is not this passkey's answer: {exc}") from None
    if checked.new_sign_count:  # an authenticator that counts: one answer per count
        async with ctx.engine.begin() as conn:
            moved = await conn.execute(
                update(t.passkeys)
                .where(
                    and_(
                        pk.credential_id == credential_id,
                        pk.sign_count < checked.new_sign_count,
                    )
                )
                .values(sign_count=checked.new_sign_count)
            )
        if moved.rowcount == 0:
            raise ChipsError("replayed", "that passkey's count went back: sign in again")
    with contextlib.suppress(RedisError, OSError):  # "last seen" only
        await ctx.redis.set(
            seen_key(ctx.settings.redis_prefix, row.device_id),
            datetime.now(UTC).isoformat(timespec="seconds"),
        )
    token, expires = issue_session(ctx.settings.signing_key, row.device_id)
    return PasskeySession(
        token=token,
        expires_at=expires,
        expires_in=expires - int(time.time()),
        device_id=row.device_id,
        participant_id=row.participant_id,
        workspace_id=row.workspace_id,
        workspace_name=row.workspace_name,
    )
