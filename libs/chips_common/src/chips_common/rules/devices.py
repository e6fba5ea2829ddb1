"""A paired device's signed exchange, and the short-lived session it earns (ADR 0125).

Pure: no I/O. A device holds an ECDSA P-256 key it cannot export; the server keeps only
the public key (SubjectPublicKeyInfo DER, base64url). To get a session the device signs

    chips-session-v1\\n<device id>\\n<unix seconds>\\n<nonce>

and sends the signature (raw r||s, as WebCrypto gives it, or DER) with those fields. The
gateway checks the time against its clock (``MAX_SKEW``), that the nonce was not seen
(:data:`NONCE_TTL`, in Redis), and the signature against the stored key; then answers a
session token: an HMAC over the device id and an expiry, so any gateway checks it alone,
and the device's row (revoked or not) is read on every request as a token's is.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.serialization import load_der_public_key

SESSION_PREFIX = "chips_ss_"
# A signed time may be this far from the gateway's clock, either way.
MAX_SKEW = 60
# A nonce is remembered this long: past it, the time check alone refuses the replay.
NONCE_TTL = 2 * MAX_SKEW + 10
SESSION_SECONDS = 15 * 60


class DeviceRefusal(ValueError):
    """Why a signed exchange is refused: a code and a sentence."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def b64decode(value: str) -> bytes:
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))


def b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def signed_bytes(device_id: str, ts: int, nonce: str) -> bytes:
    """What a device signs for a session."""
    return f"chips-session-v1\n{device_id}\n{ts}\n{nonce}".encode()


def check_public_key(public_key: str) -> ec.EllipticCurvePublicKey:
    """The key, if it is a P-256 public key in SubjectPublicKeyInfo DER, base64url."""
    try:
        key = load_der_public_key(b64decode(public_key))
    except (ValueError, TypeError):
        raise DeviceRefusal("invalid_key", "public_key is not a public key") from None
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp256r1":
        raise DeviceRefusal("invalid_key", "a device's key is ECDSA on P-256")
    return key


def check_time(ts: int, now: float) -> None:
    if abs(now - ts) > MAX_SKEW:
        raise DeviceRefusal(
            "clock_skew",
            f"the signed time is {abs(now - ts):.0f} s from the server's clock (at most "
            f"{MAX_SKEW} s is taken): set this device's clock and sign again",
        )


def check_signature(public_key: str, device_id: str, ts: int, nonce: str, signature: str) -> None:
    """Whether the device's key signed exactly these fields; refused otherwise."""
    key = check_public_key(public_key)
    try:
        raw = b64decode(signature)
    except (ValueError, TypeError):
        raise DeviceRefusal("bad_signature", "the signature is not base64url") from None
    if len(raw) == 64:  # WebCrypto's r||s
        raw = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    try:
        key.verify(raw, signed_bytes(device_id, ts, nonce), ec.ECDSA(hashes.SHA256()))
    except (InvalidSignature, ValueError):
        raise DeviceRefusal(
            "bad_signature", "the signature is not this device's over this request"
        ) from None


def _mac(signing_key: str, payload: bytes) -> bytes:
    key = hashlib.sha256(b"chips-session:" + signing_key.encode()).digest()
    return hmac.new(key, payload, hashlib.sha256).digest()


def issue_session(signing_key: str, device_id: str, now: float | None = None) -> tuple[str, int]:
    """A session token for the device, and its expiry (unix seconds)."""
    expires = int(now if now is not None else time.time()) + SESSION_SECONDS
    payload = json.dumps({"d": device_id, "e": expires}, separators=(",", ":")).encode()
    token = f"{SESSION_PREFIX}{b64encode(payload)}.{b64encode(_mac(signing_key, payload))}"
    return token, expires


def session_device(signing_key: str, token: str, now: float | None = None) -> str | None:
    """The device a session token was issued to, or None when forged or expired."""
    if not token.startswith(SESSION_PREFIX):
        return None
    body, _, mac = token[len(SESSION_PREFIX) :].partition(".")
    try:
        payload = b64decode(body)
        if not hmac.compare_digest(b64decode(mac), _mac(signing_key, payload)):
            return None
        fields = json.loads(payload)
        device_id, expires = str(fields["d"]), int(fields["e"])
    except (ValueError, TypeError, KeyError):
        return None
    if expires <= (now if now is not None else time.time()):
        return None
    return device_id
