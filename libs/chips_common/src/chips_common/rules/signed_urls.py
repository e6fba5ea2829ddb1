"""Signed attachment URLs (docs/product/websocket.md; docs/architecture/design.md §6).

A URL is ``/v1/attachments/<id>?exp=<unix seconds>&tok=<credential id>&sig=<hex>``: an
HMAC-SHA256 over the attachment, the expiry, the credential it is bound to and how the
bytes are served (inline, as a download, or the thumbnail). The key is derived from
``CHIPS_SIGNING_KEY`` for this one purpose; a previous key is still accepted while keys
are rotated. Checking compares in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from urllib.parse import urlencode

URL_TTL_SECONDS = 600
PURPOSE = b"chips attachment urls v1"


def url_key(secret: str) -> bytes:
    """The key attachment URLs are signed with, derived from the service's signing key."""
    return hmac.new(secret.encode(), PURPOSE, hashlib.sha256).digest()


def signature(key: bytes, attachment_id: str, exp: int, token_id: str, disposition: str) -> str:
    message = "\n".join((attachment_id, str(exp), token_id, disposition)).encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def signed_path(
    key: bytes,
    attachment_id: str,
    token_id: str,
    disposition: str,
    now: float,
    ttl: int = URL_TTL_SECONDS,
) -> tuple[str, int]:
    """The path and query of a URL for ``token_id``, and when it stops working."""
    exp = int(now) + ttl
    sig = signature(key, attachment_id, exp, token_id, disposition)
    suffix = "/thumbnail" if disposition == "thumbnail" else ""
    query = urlencode({"exp": exp, "tok": token_id, "sig": sig})
    return f"/v1/attachments/{attachment_id}{suffix}?{query}", exp


def check_signature(
    keys: Sequence[bytes],
    attachment_id: str,
    exp: str | None,
    token_id: str | None,
    disposition: str,
    sig: str | None,
    now: float,
) -> str | None:
    """Why the URL is refused, or None when it is good.

    Every key is tried (the current one and the previous), each in constant time.
    """
    if not exp or not token_id or not sig:
        return "this link is not signed"
    if not (exp.isascii() and sig.isascii() and token_id.isascii()):
        return "this link is not signed"
    if not exp.isdigit() or len(exp) > 12:
        return "this link is not signed"
    good = False
    for key in keys:
        expected = signature(key, attachment_id, int(exp), token_id, disposition)
        good |= hmac.compare_digest(expected, sig)
    if not good:
        return "this link's signature does not match"
    if int(exp) <= now:
        return "this link has expired; ask for the file again"
    return None
