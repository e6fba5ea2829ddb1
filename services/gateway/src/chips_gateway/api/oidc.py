"""Sign-in with the team's identity provider: OpenID Connect's authorization-code flow
with PKCE (docs/adr/0135).

The app makes its device key first, then ``POST /v1/oidc/start`` with the public half:
the gateway keeps the sign-in's state, nonce and PKCE verifier in Redis for ten minutes,
binds them to this browser with a cookie, and answers the provider's URL. The provider
sends the browser back to ``GET /v1/oidc/callback``: the gateway checks the state and
the cookie, exchanges the code (with the verifier), checks the ID token, and pairs the
browser's key as a device of the person the verified email belongs to, exactly as an
invite does. It then sends the browser to the app (``/#/signed-in/…``), or to
``/#/sign-in-refused/<code>/<sentence>``. Nothing refused is logged.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
import warnings
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, TypedDict
from urllib.parse import quote

import httpx
from authlib.deprecate import AuthlibDeprecationWarning
from fastapi import APIRouter, Cookie, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse
from pydantic import BaseModel, Field
from redis.exceptions import RedisError
from sqlalchemy import and_, func, select

from chips_common.append import Actor, InviteSecret
from chips_common.db import tables as t
from chips_common.events import JsonObject
from chips_common.ids import new_id
from chips_common.rules.devices import DeviceRefusal, check_public_key
from chips_common.tokens import hash_token
from chips_gateway.answers.people import InviteAccepted
from chips_gateway.api.invites import pair_through
from chips_gateway.api.people import refusal
from chips_gateway.config import GatewaySettings
from chips_gateway.context import Context, Ctx
from chips_gateway.errors import ChipsError
from chips_gateway.oidc import (
    Known,
    SignInRefused,
    admit,
    domains,
    verified_email,
    verify_id_token,
    with_userinfo,
)
from chips_gateway.rows import ProviderSignIn

with warnings.catch_warnings():
    # authlib 1.9 would rather use the httpx2 package; it uses httpx (Chips's) until then.
    warnings.simplefilter("ignore", AuthlibDeprecationWarning)
    from authlib.integrations.httpx_client import AsyncOAuth2Client
    from authlib.oauth2.rfc6749.errors import OAuth2Error

router = APIRouter(prefix="/v1")

COOKIE = "chips_oidc"
STATE_SECONDS = 600
INVITE_MINUTES = 10


class StartIn(BaseModel):
    public_key: str = Field(min_length=40, max_length=400)
    device_name: str = Field(default="Browser", min_length=1, max_length=120)


def enabled(settings: GatewaySettings) -> bool:
    return bool(settings.oidc_issuer and settings.oidc_client_id and settings.oidc_workspace)


def need_enabled(settings: GatewaySettings) -> None:
    if not enabled(settings):
        raise ChipsError("not_found", "this Chips has no identity provider to sign in with")


def redirect_uri(settings: GatewaySettings) -> str:
    return f"{settings.gateway_url}/v1/oidc/callback"


def oauth_client(settings: GatewaySettings) -> AsyncOAuth2Client:
    return AsyncOAuth2Client(
        client_id=settings.oidc_client_id,
        client_secret=settings.oidc_client_secret or None,
        scope="openid email profile",
        redirect_uri=redirect_uri(settings),
        code_challenge_method="S256",
        timeout=10,
    )


async def provider_json(url: str) -> JsonObject:
    try:
        async with httpx.AsyncClient(timeout=10) as http:
            r = await http.get(url)
            r.raise_for_status()
            data = r.json()
    except (httpx.HTTPError, ValueError):
        raise ChipsError(
            "unavailable", "the identity provider cannot be reached; try again shortly"
        ) from None
    if not isinstance(data, dict):
        raise ChipsError("unavailable", "the identity provider answered something else")
    return data


async def discovery(settings: GatewaySettings) -> JsonObject:
    """The provider's own description of itself: it must name the configured issuer."""
    issuer = settings.oidc_issuer.rstrip("/")
    meta = await provider_json(f"{issuer}/.well-known/openid-configuration")
    if str(meta.get("issuer", "")).rstrip("/") != issuer:
        raise ChipsError("unavailable", "the identity provider describes another issuer")
    return meta


def state_key(ctx: Context, state: str) -> str:
    return f"{ctx.settings.redis_prefix}:oidc:{hashlib.sha256(state.encode()).hexdigest()}"


@router.get("/oidc", response_model=None)
async def oidc_info(ctx: Ctx) -> ProviderSignIn:
    """Whether people may sign in with the team's identity provider, and the button's
    words. Needs no sign-in and says nothing of any workspace."""
    if not enabled(ctx.settings):
        return {"enabled": False}
    return {"enabled": True, "button": ctx.settings.oidc_button}


@router.post("/oidc/start", status_code=201)
async def oidc_start(body: StartIn, request: Request, ctx: Ctx) -> JSONResponse:
    """Begin a sign-in for the device key ``public_key``: the provider's URL to go to."""
    need_enabled(ctx.settings)
    try:
        check_public_key(body.public_key)
    except DeviceRefusal as exc:
        raise ChipsError(exc.code, exc.message) from None
    meta = await discovery(ctx.settings)
    state = secrets.token_urlsafe(24)
    nonce = secrets.token_urlsafe(24)
    verifier = secrets.token_urlsafe(48)
    binding = secrets.token_urlsafe(24)
    url, _ = oauth_client(ctx.settings).create_authorization_url(
        meta["authorization_endpoint"], state=state, nonce=nonce, code_verifier=verifier
    )
    kept: KeptSignIn = {
        "verifier": verifier,
        "nonce": nonce,
        "binding": hashlib.sha256(binding.encode()).hexdigest(),
        "public_key": body.public_key,
        "device_name": body.device_name,
        "user_agent": (request.headers.get("user-agent") or "")[:400],
    }
    try:
        await ctx.redis.set(state_key(ctx, state), json.dumps(kept), ex=STATE_SECONDS)
    except (RedisError, OSError):
        raise ChipsError(
            "unavailable", "sign-in cannot start right now; try again shortly"
        ) from None
    answer = JSONResponse({"url": url, "expires_in": STATE_SECONDS}, status_code=201)
    answer.set_cookie(
        COOKIE,
        binding,
        max_age=STATE_SECONDS,
        path="/v1/oidc",
        httponly=True,
        samesite="lax",
        secure=ctx.settings.gateway_url.startswith("https://"),
    )
    return answer


def to_app(settings: GatewaySettings, fragment: str) -> RedirectResponse:
    answer = RedirectResponse(f"{settings.gateway_url}/#/{fragment}", status_code=303)
    answer.delete_cookie(COOKIE, path="/v1/oidc")
    return answer


def refused_to_app(settings: GatewaySettings, code: str, message: str) -> RedirectResponse:
    return to_app(settings, f"sign-in-refused/{code}/{quote(message, safe='')}")


@router.get("/oidc/callback", response_class=RedirectResponse, status_code=303)
async def oidc_callback(
    ctx: Ctx,
    state: Annotated[str, Query(max_length=200)] = "",
    code: Annotated[str, Query(max_length=2000)] = "",
    error: Annotated[str, Query(max_length=200)] = "",
    error_description: Annotated[str, Query(max_length=500)] = "",
    chips_oidc: Annotated[str | None, Cookie()] = None,
) -> RedirectResponse:
    """Where the provider sends the browser back: the browser is paired, or told why not."""
    settings = ctx.settings
    need_enabled(settings)
    try:
        kept = await take_state(ctx, state, chips_oidc)
        if error:
            raise SignInRefused(
                "oidc_refused",
                f"the identity provider did not sign you in: {error_description or error}",
            )
        if not code:
            raise SignInRefused("oidc_refused", "the identity provider sent no code back")
        claims = await exchange(ctx, code, kept)
        email = verified_email(claims, domains(settings.oidc_allowed_domains))
        paired = await sign_in(ctx, email, claims, kept)
    except SignInRefused as exc:
        return refused_to_app(settings, exc.code, exc.message)
    except ChipsError as exc:
        return refused_to_app(settings, exc.code, exc.message)
    fields = (
        paired.device_id,
        paired.participant_id,
        paired.workspace_id,
        paired.name,
        paired.workspace_name,
    )
    return to_app(settings, "signed-in/" + "/".join(quote(str(f), safe="") for f in fields))


class KeptSignIn(TypedDict):
    """What a sign-in keeps in Redis between its start and the provider's callback."""

    verifier: str
    nonce: str
    binding: str
    public_key: str
    device_name: str
    user_agent: str


async def take_state(ctx: Context, state: str, binding: str | None) -> KeptSignIn:
    """The sign-in this state began, once (it is forgotten as it is read), and only in the
    browser that began it."""
    if not state:
        raise SignInRefused("invalid_state", "this sign-in was not begun here; start again")
    try:
        raw = await ctx.redis.getdel(state_key(ctx, state))
    except (RedisError, OSError):
        raise SignInRefused("unavailable", "sign-in cannot finish right now; try again") from None
    if raw is None:
        raise SignInRefused(
            "invalid_state", "this sign-in is unknown, used already, or too old; start again"
        )
    kept: KeptSignIn = json.loads(raw)  # as oidc_start wrote it
    presented = hashlib.sha256((binding or "").encode()).hexdigest()
    if not binding or not hmac.compare_digest(presented, kept["binding"]):
        raise SignInRefused(
            "invalid_state", "this sign-in was begun in another browser; start again here"
        )
    return kept


async def exchange(ctx: Context, code: str, kept: KeptSignIn) -> JsonObject:
    """The code exchanged for tokens (with the PKCE verifier), and the ID token's claims."""
    settings = ctx.settings
    meta = await discovery(settings)
    try:
        async with oauth_client(settings) as client:
            token = await client.fetch_token(
                meta["token_endpoint"],
                grant_type="authorization_code",
                code=code,
                code_verifier=kept["verifier"],
            )
    except OAuth2Error as exc:
        raise SignInRefused(
            "oidc_refused",
            f"the identity provider refused the sign-in: {exc.description or exc.error}",
        ) from None
    except httpx.HTTPError:
        raise SignInRefused("unavailable", "the identity provider cannot be reached") from None
    id_token = token.get("id_token")
    if not isinstance(id_token, str):
        raise SignInRefused("invalid_id_token", "the identity provider sent no ID token")
    jwks = await provider_json(str(meta["jwks_uri"]))
    claims = verify_id_token(
        id_token,
        jwks,
        issuer=settings.oidc_issuer.rstrip("/"),
        client_id=settings.oidc_client_id,
        nonce=kept["nonce"],
        now=time.time(),
    )
    if "email" not in claims and meta.get("userinfo_endpoint"):
        # Many providers put the email in the UserInfo answer only, not in the ID token.
        claims = with_userinfo(claims, await userinfo(meta, token))
    return claims


async def userinfo(meta: JsonObject, token: Mapping[str, object]) -> JsonObject:
    try:
        async with httpx.AsyncClient(timeout=10) as http:
            r = await http.get(
                str(meta["userinfo_endpoint"]),
                headers={"Authorization": f"Bearer {token.get('access_token', '')}"},
            )
            r.raise_for_status()
            data = r.json()
    except (httpx.HTTPError, ValueError):
        raise SignInRefused(
            "unavailable", "the identity provider did not say who you are; try again"
        ) from None
    return data if isinstance(data, dict) else {}


async def known(ctx: Context, workspace_id: str, email: str) -> tuple[Known, Any, Any]:
    """What the workspace knows of an email: the person who came in through an invite to
    it (or a sign-in with it), else the invite waiting for it."""
    iv, p = t.invites.c, t.participants.c
    async with ctx.engine.connect() as conn:
        person = (
            await conn.execute(
                select(p.id, p.name, p.role, p.active)
                .select_from(t.invites.join(t.participants, p.id == iv.used_by))
                .where(
                    and_(
                        iv.workspace_id == workspace_id,
                        func.lower(iv.email) == email,
                        iv.state == "used",
                        iv.participant_id.is_(None),
                        p.workspace_id == workspace_id,
                    )
                )
                .order_by(iv.created_at.desc())
                .limit(1)
            )
        ).first()
        waiting = (
            await conn.execute(
                select(t.invites, t.workspaces.c.name.label("workspace_name"))
                .select_from(t.invites.join(t.workspaces, t.workspaces.c.id == iv.workspace_id))
                .where(
                    and_(
                        iv.workspace_id == workspace_id,
                        func.lower(iv.email) == email,
                        iv.state == "pending",
                        iv.participant_id.is_(None),
                        iv.expires_at > datetime.now(UTC),
                    )
                )
                .order_by(iv.created_at.desc())
                .limit(1)
            )
        ).first()
    return (
        Known(
            invite_id=waiting.id if waiting is not None else None,
            participant_id=person.id if person is not None else None,
            active=bool(person.active) if person is not None else True,
        ),
        person,
        waiting,
    )


async def sign_in(ctx: Context, email: str, claims: JsonObject, kept: KeptSignIn) -> InviteAccepted:
    """Pair the browser's key for the person this verified email is (docs/adr/0135)."""
    workspace_id = ctx.settings.oidc_workspace
    what, person, waiting = await known(ctx, workspace_id, email)
    how = admit(what, ctx.settings.oidc_new_people)
    device = {
        "public_key": kept["public_key"],
        "device_name": kept["device_name"],
        "kind": "browser",
        "user_agent": kept["user_agent"],
    }
    if how == "invite":
        return await pair_through(ctx, waiting, waiting.secret_hash, **device)
    # A fresh one-time invite made for this sign-in: a pairing code of the person's own,
    # or (a new member) the operator's invite, then used at once, as a link would be.
    secret = secrets.token_urlsafe(32)
    invite_id = new_id("inv")
    expires = datetime.now(UTC) + timedelta(minutes=INVITE_MINUTES)
    event: JsonObject = {
        "type": "invite.created",
        "invite_id": invite_id,
        "expires_at": expires.isoformat(timespec="seconds"),
    }
    if how == "person":
        actor = Actor(kind="person", id=person.id)
        event.update(name=person.name, role=person.role, participant_id=person.id)
    else:
        actor = Actor(kind="operator", id="operator")
        given = claims.get("name")
        name = given if isinstance(given, str) else None
        event.update(name=(name or email.split("@")[0])[:80], role="member")
    answer = await ctx.appender.append(
        workspace_id,
        "oidc",
        actor,
        f"oidc-{invite_id}",
        [event],
        invite=InviteSecret(secret_hash=hash_token(secret), email=email),
    )
    refusal(answer)
    async with ctx.engine.connect() as conn:
        row = (
            await conn.execute(
                select(t.invites, t.workspaces.c.name.label("workspace_name"))
                .select_from(
                    t.invites.join(t.workspaces, t.workspaces.c.id == t.invites.c.workspace_id)
                )
                .where(and_(t.invites.c.workspace_id == workspace_id, t.invites.c.id == invite_id))
            )
        ).first()
    if row is None:
        raise ChipsError("unavailable", "sign-in cannot finish right now; try again")
    return await pair_through(ctx, row, hash_token(secret), **device)
