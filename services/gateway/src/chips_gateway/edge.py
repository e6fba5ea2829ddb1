"""What is checked before a request reaches a route: size, shape and Origin.

One ASGI middleware, in front of everything (authentication included), so that a body
too big for the path is refused without being read, a request whose target Postgres
could not take (a NUL character, a number past a 64-bit seq) is answered with the error
model instead of a 500, and a browser on a foreign site cannot open ``/v1/ws`` with a
person's ticket (cross-site WebSocket hijacking; docs/adr/0040).
"""

from __future__ import annotations

import re
from typing import TypedDict
from urllib.parse import parse_qsl, unquote, urlsplit

import orjson
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chips_gateway.errors import ChipsError

# The largest seq (and any count) Postgres's bigint holds.
MAX_INT = 2**63 - 1


UPLOADS_PATH = "/v1/uploads"

# A JSON escape of NUL: "\u0000" after an even number of backslashes (an odd number would
# make it the six characters a person typed).
_NUL = re.compile(rb"(?:^|[^\\])(?:\\\\)*\\u0000")


def has_nul(encoded: bytes) -> bool:
    """Whether JSON text holds a NUL character (which Postgres cannot store)."""
    return b"\\u0000" in encoded and _NUL.search(encoded) is not None


def target_problem(path: str, query_string: bytes) -> str | None:
    """Why a request's path or query cannot be answered, or None when it can."""
    if "\x00" in path or "%00" in path:
        return "the path holds a NUL character"
    try:
        pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    except ValueError:
        return "the query string cannot be read"
    for name, value in pairs:
        if "\x00" in name or "\x00" in value:
            return f"{name or 'the query'}: holds a NUL character"
        digits = value.lstrip("+-")
        if digits.isdecimal() and len(digits) > 18 and abs(int(value)) > MAX_INT:
            return f"{name}: {value[:24]} is out of range (at most {MAX_INT})"
    return None


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL, lower-cased, without a default port."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    port = parts.port
    default = {"http": 80, "https": 443, "ws": 80, "wss": 443}.get(scheme)
    return f"{scheme}://{host}" + (f":{port}" if port and port != default else "")


def origin_allowed(origin: str | None, host: str | None, secure: bool, allowed: list[str]) -> bool:
    """Whether a request from ``origin`` may use the API with a browser's credentials.

    No Origin (a harness, the CLI, a server) is allowed: only browsers send one, and only
    they can be tricked into sending someone's credentials. The gateway's own origin (the
    people's app is served from it) is allowed; so is every origin in ``allowed`` ("*"
    allows any).
    """
    if origin is None:
        return True
    if "*" in allowed:
        return True
    try:
        seen = origin_of(origin)
    except ValueError:
        return False
    if host:
        own = origin_of(f"{'https' if secure else 'http'}://{host}")
        if seen == own:
            return True
    return seen in {origin_of(a) for a in allowed if a != "*"}


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


class BodyTooLarge(ChipsError, HTTPException):
    """Raised from ``receive`` once a body passes the limit.

    An HTTPException, so FastAPI's body reading lets it through instead of calling it a
    parse error; a ChipsError, so it is answered with the error model (413).
    """

    def __init__(self, limit: int) -> None:
        message = f"a request body is at most {limit} bytes"
        Exception.__init__(self, message)
        self.code, self.message, self.extra = "too_large", message, {}
        self.status_code, self.detail, self.headers = 413, message, None


async def send_error(send: Send, status: int, code: str, message: str) -> None:
    body = orjson.dumps({"code": code, "message": message})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class Edge:
    """The checks at the edge, as pure ASGI middleware (it never reads a body itself)."""

    def __init__(
        self, app: ASGIApp, *, max_body_bytes: int, allowed_origins: list[str], public_url: str
    ) -> None:
        self.app = app
        self.max_body = max_body_bytes
        self.allowed = [*allowed_origins, *([public_url] if public_url else [])]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        problem = target_problem(
            unquote(scope.get("raw_path", b"").decode("latin-1")) or scope["path"],
            scope.get("query_string", b""),
        )
        if scope["type"] == "websocket":
            origin = header(scope, b"origin")
            if problem or not origin_allowed(
                origin, header(scope, b"host"), scope.get("scheme") == "wss", self.allowed
            ):
                # Refused before the upgrade: the client sees HTTP 403 (docs/protocol.md).
                await send({"type": "websocket.close", "code": 1008})
                return
            await self.app(scope, receive, send)
            return
        if problem:
            await send_error(send, 400, "invalid_request", problem)
            return
        if scope["path"] == UPLOADS_PATH:
            # A file's bytes are streamed on to the attachments service, whose ceiling
            # (CHIPS_MAX_ATTACHMENT_BYTES) is the limit here (ADR 0043).
            await self.app(scope, receive, send)
            return
        length = header(scope, b"content-length")
        if length is not None:
            if not length.isdecimal():
                await send_error(send, 400, "invalid_request", "Content-Length is not a number")
                return
            if int(length) > self.max_body:
                await send_error(send, 413, "too_large", self.too_large())
                return
        await self.limited(scope, receive, send)

    def too_large(self) -> str:
        return f"a request body is at most {self.max_body} bytes"

    async def limited(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the app, refusing a chunked body as soon as it passes the limit."""
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise BodyTooLarge(self.max_body)
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except BodyTooLarge:
            if not started:
                await send_error(send, 413, "too_large", self.too_large())


class CorsOptions(TypedDict):
    """Starlette's ``CORSMiddleware`` arguments, as the gateway sets them."""

    allow_origins: list[str]
    allow_credentials: bool
    allow_methods: list[str]
    allow_headers: list[str]
    max_age: int


def cors_options(allowed_origins: list[str]) -> CorsOptions:
    """CORS for the HTTP API, set deliberately: only the listed origins, bearer tokens
    (no cookies), the headers and methods the API takes."""
    return {
        "allow_origins": allowed_origins,
        "allow_credentials": False,
        "allow_methods": ["GET", "POST", "PUT", "PATCH", "DELETE"],
        "allow_headers": ["Authorization", "Content-Type", "Idempotency-Key", "traceparent"],
        "max_age": 600,
    }
