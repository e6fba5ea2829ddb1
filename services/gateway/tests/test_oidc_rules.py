"""What an ID token must say before Chips believes it, and whom a verified email lets in
(chips_gateway/oidc.py, docs/adr/0135). Tokens are signed here with keys made here, as a
provider signs them; one made by another key, for another issuer or audience, with
another nonce, or expired is refused."""

from __future__ import annotations

import time
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, RSAKey

from chips_gateway.oidc import (
    Known,
    SignInRefused,
    admit,
    domains,
    verified_email,
    verify_id_token,
    with_userinfo,
)

pytestmark = pytest.mark.unit

ISSUER, CLIENT, NONCE = "https://id.acme.test", "chips", "n-0123456789"
KEY = RSAKey.generate_key(2048, parameters={"kid": "k1", "alg": "RS256", "use": "sig"})
OTHER = RSAKey.generate_key(2048, parameters={"kid": "k1", "alg": "RS256", "use": "sig"})
JWKS = KeySet([KEY]).as_dict(private=False)
NOW = time.time()


def token(key: Any = KEY, alg: str = "RS256", **claims: Any) -> str:
    body = {
        "iss": ISSUER,
        "aud": CLIENT,
        "sub": "u-1",
        "nonce": NONCE,
        "iat": int(NOW),
        "exp": int(NOW) + 300,
        **claims,
    }
    body = {k: v for k, v in body.items() if v is not None}
    return jwt.encode({"alg": alg, "kid": "k1"}, body, key)


def verify(t: str) -> dict[str, Any]:
    return verify_id_token(t, JWKS, issuer=ISSUER, client_id=CLIENT, nonce=NONCE, now=NOW)


def test_a_good_token_is_believed() -> None:
    assert verify(token(email="a@acme.test"))["email"] == "a@acme.test"
    assert verify(token(aud=[CLIENT, "other"], azp=CLIENT))["sub"] == "u-1"


@pytest.mark.parametrize(
    ("t", "words"),
    [
        (lambda: token(OTHER), "not signed by it"),
        (lambda: token(iss="https://evil.test"), "another provider"),
        (lambda: token(aud="someone-else"), "another client"),
        (lambda: token(aud=[CLIENT, "other"]), "another client"),
        (lambda: token(nonce="n-replayed"), "nonce"),
        (lambda: token(nonce=None), "nonce"),
        (lambda: token(exp=int(NOW) - 120), "expired"),
        (lambda: token(iat=int(NOW) + 600), "future"),
        (lambda: token(sub=None), "names nobody"),
        (lambda: "not.a.token", "not signed by it"),
    ],
)
def test_a_token_that_is_refused(t: Any, words: str) -> None:
    with pytest.raises(SignInRefused) as caught:
        verify(t())
    assert caught.value.code == "invalid_id_token"
    assert words in caught.value.message


def test_an_unsigned_or_hmac_token_is_refused() -> None:
    from joserfc.jwk import OctKey

    secret = OctKey.import_key(b"x" * 32)
    with pytest.raises(SignInRefused):
        verify(token(secret, alg="HS256"))
    ec = ECKey.generate_key("P-256", parameters={"kid": "k1"})
    with pytest.raises(SignInRefused):
        verify(token(ec, alg="ES256"))  # a key the provider never published


def test_userinfo_counts_only_for_the_same_subject() -> None:
    claims = {"sub": "u-1"}
    merged = with_userinfo(claims, {"sub": "u-1", "email": "a@acme.test", "email_verified": True})
    assert merged["email"] == "a@acme.test"
    with pytest.raises(SignInRefused):
        with_userinfo(claims, {"sub": "u-2", "email": "b@acme.test"})


def test_the_email_must_be_verified_and_of_an_allowed_domain() -> None:
    allowed = domains(" Acme.test, @corp.test ,")
    assert allowed == ["acme.test", "corp.test"]
    ok = {"email": "Dana@ACME.test", "email_verified": True}
    assert verified_email(ok, allowed) == "dana@acme.test"
    assert verified_email({**ok, "email": "x@elsewhere.test"}, []) == "x@elsewhere.test"
    cases = [
        ({"email_verified": True}, "email_unverified"),
        ({**ok, "email_verified": False}, "email_unverified"),
        ({**ok, "email_verified": "true"}, "email_unverified"),
        ({**ok, "email": "x@elsewhere.test"}, "domain_not_allowed"),
        ({**ok, "email": "x@sub.acme.test"}, "domain_not_allowed"),
    ]
    for claims, code in cases:
        with pytest.raises(SignInRefused) as caught:
            verified_email(claims, allowed)
        assert caught.value.code == code, claims


def test_whom_an_email_lets_in() -> None:
    assert admit(Known(participant_id="usr_1", invite_id="inv_1"), "invite") == "person"
    assert admit(Known(invite_id="inv_1"), "invite") == "invite"
    assert admit(Known(), "member") == "new"
    for known, code in [
        (Known(), "not_invited"),
        (Known(participant_id="usr_1", active=False), "deactivated"),
    ]:
        with pytest.raises(SignInRefused) as caught:
            admit(known, "member" if code == "deactivated" else "invite")
        assert caught.value.code == code
