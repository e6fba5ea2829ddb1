"""One Web Push to one subscription (RFC 8030), encrypted per RFC 8291 (``aes128gcm``)
by ``pywebpush`` and signed with the kept VAPID key (RFC 8292), in two steps around the
point of no return, as an email is (``mail.py``; docs/adr/0132).

``stage`` opens the connection and sends the request but the body's last byte: a push
service acts on a request only once it has the whole body its ``Content-Length`` says,
so a connection that drops before then leaves nothing to deliver. ``finish`` sends the
last byte and reads the answer. The sender commits a marker between the two.

Blocking (``http.client``): run in a thread.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from py_vapid import Vapid02
from pywebpush import WebPusher

from chips_common.rules.notifications import Notification
from chips_notifier.keys import VapidKeys

# How long a push service keeps a push for a browser that is offline.
TTL_SECONDS = 24 * 3600


class Unusable(Exception):
    """The subscription's keys or endpoint cannot be used: no try will do better."""


@dataclass(frozen=True)
class Target:
    endpoint: str
    p256dh: str
    auth: str


@dataclass
class Staged:
    conn: http.client.HTTPConnection
    last: bytes
    endpoint: str


def outcome_of(status: int) -> str:
    """``sent``; ``gone`` (the subscription is no more: 404, 410); ``refused`` (another
    4xx: the same push will be refused again); ``retry`` (429, 5xx)."""
    if status < 300:
        return "sent"
    if status in (404, 410):
        return "gone"
    if status == 429 or status >= 500:
        return "retry"
    return "refused"


class PushPayload(Notification):
    """A push's JSON: the notification as the API lists it, and the app's link to it."""

    url: str


class Pusher:
    def __init__(self, keys: VapidKeys, subject: str, timeout: float) -> None:
        self.vapid = Vapid02.from_pem(keys.private_pem.encode())
        self.subject = subject
        self.timeout = timeout

    def request(
        self, target: Target, payload: PushPayload, topic: str, urgent: bool
    ) -> tuple[bytes, dict[str, str]]:
        """The encrypted body and the headers of a push."""
        subscription = {
            "endpoint": target.endpoint,
            "keys": {"p256dh": target.p256dh, "auth": target.auth},
        }
        parts = urlsplit(target.endpoint)
        claims = {
            "sub": self.subject,
            "aud": f"{parts.scheme}://{parts.netloc}",
            "exp": int(time.time()) + 12 * 3600,
        }
        try:
            data = json.dumps(payload, separators=(",", ":")).encode()
            prepared = WebPusher(subscription)._prepare_send_data(
                data, {}, ttl=TTL_SECONDS, content_encoding="aes128gcm"
            )
            signed = self.vapid.sign(claims)
        except Exception as problem:  # the keys a browser gave that are no keys
            raise Unusable(str(problem)) from None
        headers = {str(k): str(v) for k, v in prepared["headers"].items()}
        headers.update({str(k): str(v) for k, v in signed.items()})
        # A push service keeps one push per topic: a newer one replaces it.
        headers["Topic"] = topic[-32:]
        headers["Urgency"] = "high" if urgent else "normal"
        headers["Content-Type"] = "application/octet-stream"
        return bytes(prepared["data"]), headers

    def stage(self, target: Target, payload: PushPayload, topic: str, urgent: bool) -> Staged:
        """Everything but the body's last byte; the open connection."""
        body, headers = self.request(target, payload, topic, urgent)
        parts = urlsplit(target.endpoint)
        if not parts.hostname or parts.scheme not in ("https", "http"):
            raise Unusable(f"not a push endpoint: {target.endpoint[:80]}")
        conn: http.client.HTTPConnection
        if parts.scheme == "https":
            conn = http.client.HTTPSConnection(
                parts.hostname,
                parts.port,
                timeout=self.timeout,
                context=ssl.create_default_context(),
            )
        else:
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=self.timeout)
        try:
            path = parts.path or "/"
            conn.putrequest("POST", f"{path}?{parts.query}" if parts.query else path)
            for name, value in headers.items():
                conn.putheader(name, value)
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders()
            conn.send(body[:-1])
        except BaseException:
            conn.close()
            raise
        return Staged(conn, body[-1:], target.endpoint)

    def finish(self, staged: Staged) -> str:
        """The last byte: the push service acts, and answers (``outcome_of``)."""
        try:
            staged.conn.send(staged.last)
            response = staged.conn.getresponse()
            response.read()
            return outcome_of(response.status)
        finally:
            with contextlib.suppress(Exception):
                staged.conn.close()

    @staticmethod
    def abandon(staged: Staged) -> None:
        with contextlib.suppress(Exception):
            staged.conn.close()
