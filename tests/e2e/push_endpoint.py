"""A Web Push endpoint of the test's own on 127.0.0.1, standing in for a browser's push
service (docs/adr/0132): it checks each push's VAPID JWT (RFC 8292) against the server's
public key and decrypts the payload (RFC 8291, ``aes128gcm``) with keys the test made,
as the browser would. Nothing of Chips's code is used to check Chips."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import http_ece
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class Push:
    headers: dict[str, str]  # lower-cased names
    claims: dict[str, Any]
    payload: dict[str, Any]
    at: float


@dataclass
class Browser:
    """One subscription: its own P-256 key pair and auth secret, as a browser makes."""

    private: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    auth: bytes = field(default_factory=lambda: os.urandom(16))

    def keys(self) -> dict[str, str]:
        point = self.private.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return {"p256dh": b64(point), "auth": b64(self.auth)}


def check_vapid(authorization: str, server_key: str, origin: str) -> dict[str, Any]:
    """The claims of a ``vapid t=<jwt>,k=<key>`` header whose ES256 signature verifies with
    ``server_key``; raises AssertionError otherwise."""
    scheme, _, params = authorization.partition(" ")
    assert scheme.lower() == "vapid", authorization
    parts = dict(p.strip().split("=", 1) for p in params.split(","))
    assert parts["k"] == server_key, "the push names another key than the server's"
    header_b64, claims_b64, signature_b64 = parts["t"].split(".")
    header = json.loads(unb64(header_b64))
    assert header["alg"] == "ES256", header
    signature = unb64(signature_b64)
    assert len(signature) == 64
    der = encode_dss_signature(
        int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
    )
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64(server_key))
    try:
        public.verify(der, f"{header_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise AssertionError("the VAPID signature does not verify") from None
    claims: dict[str, Any] = json.loads(unb64(claims_b64))
    assert claims["aud"] == origin, claims
    assert claims["exp"] > time.time() and claims["sub"].startswith(("mailto:", "https:"))
    return claims


class Endpoint:
    def __init__(self, server_key: str) -> None:
        self.server_key = server_key
        self.browsers: dict[str, Browser] = {}
        self.pushes: dict[str, list[Push]] = {}
        self.problems: list[str] = []
        # Subscriptions this push service has dropped (answered 410 Gone), and how many
        # pushes were sent to each after that.
        self.gone: dict[str, int] = {}
        # Requests whose connection closed before the whole body came, by subscription.
        self.cut: dict[str, int] = {}
        self.lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                body = self.rfile.read(length)
                name = self.path.rsplit("/", 1)[-1]
                if len(body) < length:
                    # The sender went before the body's last byte (a notifier killed
                    # between its two steps): as a push service does, nothing is delivered.
                    with endpoint.lock:
                        endpoint.cut[name] = endpoint.cut.get(name, 0) + 1
                    self.close_connection = True
                    return
                with endpoint.lock:
                    dropped = name in endpoint.gone
                    if dropped:
                        endpoint.gone[name] += 1
                if dropped:
                    self.send_response(410)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                endpoint.take(self.path, headers, body)
                self.send_response(201)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def subscription(self, name: str) -> dict[str, Any]:
        browser = self.browsers.setdefault(name, Browser())
        return {"endpoint": f"{self.origin}/push/{name}", "keys": browser.keys()}

    def take(self, path: str, headers: dict[str, str], body: bytes) -> None:
        name = path.rsplit("/", 1)[-1]
        try:
            browser = self.browsers[name]
            claims = check_vapid(headers["authorization"], self.server_key, self.origin)
            assert headers.get("content-encoding") == "aes128gcm", headers
            plain = http_ece.decrypt(
                body, private_key=browser.private, auth_secret=browser.auth, version="aes128gcm"
            )
            push = Push(headers, claims, json.loads(plain), time.monotonic())
        except Exception as problem:
            with self.lock:
                self.problems.append(f"{name}: {problem!r}")
            return
        with self.lock:
            self.pushes.setdefault(name, []).append(push)

    def drop(self, name: str) -> None:
        """The push service forgets this subscription: 410 Gone from now on."""
        with self.lock:
            self.gone[name] = 0

    def tried_after_drop(self, name: str) -> int:
        with self.lock:
            return self.gone[name]

    def received(self, name: str, predicate: Callable[[Push], bool] = lambda p: True) -> list[Push]:
        with self.lock:
            return [p for p in self.pushes.get(name, []) if predicate(p)]

    async def wait_for(
        self, name: str, predicate: Callable[[Push], bool], timeout: float = 30
    ) -> Push:
        deadline = time.monotonic() + timeout
        while True:
            assert not self.problems, self.problems
            found = self.received(name, predicate)
            if found:
                return found[0]
            assert time.monotonic() < deadline, f"no such push to {name} within {timeout} s"
            await asyncio.sleep(0.05)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
