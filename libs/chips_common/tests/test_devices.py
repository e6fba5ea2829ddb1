"""A device's signed exchange and its session (rules/devices.py, ADR 0125)."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from chips_common.rules.devices import (
    MAX_SKEW,
    SESSION_SECONDS,
    DeviceRefusal,
    b64encode,
    check_public_key,
    check_signature,
    check_time,
    issue_session,
    session_device,
    signed_bytes,
)

pytestmark = pytest.mark.unit


def keypair() -> tuple[ec.EllipticCurvePrivateKey, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    spki = key.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    return key, b64encode(spki)


def sign_raw(key: ec.EllipticCurvePrivateKey, data: bytes) -> str:
    """As WebCrypto signs: r||s, 32 bytes each."""
    r, s = decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
    return b64encode(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def test_a_device_s_signature_is_taken_raw_or_der() -> None:
    key, public = keypair()
    check_signature(public, "crd_1", 100, "n1", sign_raw(key, signed_bytes("crd_1", 100, "n1")))
    der = key.sign(signed_bytes("crd_1", 100, "n1"), ec.ECDSA(hashes.SHA256()))
    check_signature(public, "crd_1", 100, "n1", b64encode(der))


@pytest.mark.parametrize(
    ("device", "ts", "nonce"), [("crd_2", 100, "n1"), ("crd_1", 101, "n1"), ("crd_1", 100, "n2")]
)
def test_a_signature_over_other_bytes_is_refused(device: str, ts: int, nonce: str) -> None:
    key, public = keypair()
    signature = sign_raw(key, signed_bytes(device, ts, nonce))
    with pytest.raises(DeviceRefusal) as caught:
        check_signature(public, "crd_1", 100, "n1", signature)
    assert caught.value.code == "bad_signature"


def test_another_key_s_signature_is_refused() -> None:
    _, public = keypair()
    other, _ = keypair()
    with pytest.raises(DeviceRefusal) as caught:
        check_signature(public, "crd_1", 1, "n", sign_raw(other, signed_bytes("crd_1", 1, "n")))
    assert caught.value.code == "bad_signature"


def test_only_a_p256_key_is_taken() -> None:
    other = ec.generate_private_key(ec.SECP384R1()).public_key()
    spki = b64encode(other.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo))
    with pytest.raises(DeviceRefusal, match="P-256"):
        check_public_key(spki)
    with pytest.raises(DeviceRefusal, match="not a public key"):
        check_public_key("bm90IGEga2V5")


def test_a_time_too_far_from_the_clock_is_refused() -> None:
    check_time(1000, 1000 + MAX_SKEW)
    check_time(1000, 1000 - MAX_SKEW)
    for now in (1000 + MAX_SKEW + 1, 1000 - MAX_SKEW - 1):
        with pytest.raises(DeviceRefusal) as caught:
            check_time(1000, now)
        assert caught.value.code == "clock_skew"


def test_a_session_names_its_device_until_it_expires() -> None:
    token, expires = issue_session("k", "crd_1", now=1000)
    assert expires == 1000 + SESSION_SECONDS
    assert session_device("k", token, now=1001) == "crd_1"
    assert session_device("k", token, now=expires) is None
    assert session_device("other key", token, now=1001) is None
    forged = token.replace(token.split(".")[0][-4:], "AAAA")
    assert session_device("k", forged, now=1001) is None
    assert session_device("k", "chips_pt_x", now=1001) is None
