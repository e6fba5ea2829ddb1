"""Sign-in with the team's identity provider (OpenID Connect; docs/adr/0135).

The rules here are pure: what an ID token must say before Chips believes it
(:func:`verify_id_token`), and whom a verified email lets in (:func:`admit`). The routes
that run the authorization-code flow with PKCE are in ``api/oidc.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from chips_common.events import JsonObject

# Signature algorithms an ID token may use; "none" and the HMAC family never.
ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA"]
# Leeway for the provider's clock against ours, in seconds.
LEEWAY = 60


class SignInRefused(Exception):
    """A sign-in refused: a code and a sentence for the person."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def verify_id_token(
    id_token: str,
    jwks: JsonObject,
    *,
    issuer: str,
    client_id: str,
    nonce: str,
    now: float,
) -> JsonObject:
    """The claims of an ID token signed by one of the provider's keys, issued by
    ``issuer`` for ``client_id``, carrying the nonce this sign-in sent, and not expired;
    else refused ``invalid_id_token`` with what is wrong."""
    try:
        token = jwt.decode(id_token, KeySet.import_key_set(jwks), algorithms=ALGORITHMS)  # type: ignore[arg-type]
    except (JoseError, ValueError) as exc:
        raise SignInRefused(
            "invalid_id_token", f"the identity provider's answer is not signed by it ({exc})"
        ) from None
    claims: JsonObject = dict(token.claims)
    if claims.get("iss") != issuer:
        raise SignInRefused("invalid_id_token", "the ID token was issued by another provider")
    aud = claims.get("aud")
    audiences = aud if isinstance(aud, list) else [aud]
    if client_id not in audiences:
        raise SignInRefused("invalid_id_token", "the ID token was issued for another client")
    if len(audiences) > 1 and claims.get("azp") != client_id:
        raise SignInRefused("invalid_id_token", "the ID token was issued for another client")
    if claims.get("nonce") != nonce:
        raise SignInRefused("invalid_id_token", "the ID token does not carry this sign-in's nonce")
    exp = claims.get("exp")
    if not isinstance(exp, int | float) or exp + LEEWAY < now:
        raise SignInRefused("invalid_id_token", "the ID token has expired")
    iat = claims.get("iat")
    if isinstance(iat, int | float) and iat - LEEWAY > now:
        raise SignInRefused("invalid_id_token", "the ID token was issued in the future")
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise SignInRefused("invalid_id_token", "the ID token names nobody")
    return claims


def with_userinfo(claims: JsonObject, info: JsonObject) -> JsonObject:
    """The ID token's claims with the email and name of the provider's UserInfo answer,
    taken only when it is about the same subject (OpenID Connect Core §5.3.2)."""
    if info.get("sub") != claims.get("sub"):
        raise SignInRefused(
            "invalid_id_token", "the identity provider's UserInfo is about somebody else"
        )
    merged = dict(claims)
    for name in ("email", "email_verified", "name"):
        if name in info and name not in merged:
            merged[name] = info[name]
    return merged


def domains(setting: str) -> list[str]:
    """``CHIPS_OIDC_ALLOWED_DOMAINS`` as a list: lower case, without a leading @."""
    return [d.strip().lower().lstrip("@") for d in setting.split(",") if d.strip()]


def verified_email(claims: JsonObject, allowed: list[str]) -> str:
    """The email the provider vouches for, lower case; refused when there is none, it is
    not verified, or its domain is not one the workspace allows (when it names any)."""
    email = claims.get("email")
    if not isinstance(email, str) or "@" not in email:
        raise SignInRefused(
            "email_unverified", "your identity provider did not tell Chips your email address"
        )
    if claims.get("email_verified") is not True:
        raise SignInRefused(
            "email_unverified",
            f"your identity provider has not verified {email}; verify it there, then try again",
        )
    email = email.strip().lower()
    domain = email.rsplit("@", 1)[1]
    if allowed and domain not in allowed:
        raise SignInRefused(
            "domain_not_allowed",
            f"this workspace takes sign-ins from {', '.join(allowed)} only, not {domain}",
        )
    return email


@dataclass(frozen=True)
class Known:
    """What the workspace knows of an email: a pending invite, or a person."""

    invite_id: str | None = None
    participant_id: str | None = None
    active: bool = True


Admission = Literal["invite", "person", "new"]


def admit(known: Known, new_people: str) -> Admission:
    """How a verified email comes in: through the invite waiting for it, as the person it
    already is, or (when the workspace lets anyone of its domains in) as a new member."""
    if known.participant_id is not None:
        if not known.active:
            raise SignInRefused(
                "deactivated",
                "your account in this workspace was deactivated; an owner or admin can "
                "reactivate it",
            )
        return "person"
    if known.invite_id is not None:
        return "invite"
    if new_people == "member":
        return "new"
    raise SignInRefused(
        "not_invited",
        "nobody has invited that email address to this workspace; ask an owner or admin "
        "for an invite",
    )
