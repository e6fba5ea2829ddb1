"""Errors a client is told: a code and a sentence, never a stack trace."""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from chips_common.db.away import DATABASE_AWAY as DATABASE_AWAY
from chips_common.events import JsonObject

log = logging.getLogger(__name__)

HTTP_STATUS = {
    "invalid_frame": 400,
    "invalid_request": 400,
    "invalid_event": 422,
    # A used Idempotency-Key sent with another request (docs/adr/0126).
    "idempotency_key_reused": 422,
    # A device's public key that is well formed but no P-256 key (docs/adr/0125).
    "invalid_key": 422,
    # A notification preference that is well formed but none we can take (docs/adr/0132).
    "invalid_preference": 422,
    # An agent's face that is neither one emoji nor a picture (docs/adr/0153).
    "invalid_face": 422,
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "stale_file": 409,
    # Where an agent may be (docs/adr/0071): it is in another room, the room is archived,
    # or a Main agent and its Main room keep to each other.
    "agent_elsewhere": 409,
    "room_closed": 409,
    "lead_room": 409,
    "not_connected": 409,
    # An invite link or pairing code that cannot be used (docs/adr/0125).
    "invalid_invite": 404,
    "invite_used": 410,
    "invite_withdrawn": 410,
    "invite_expired": 410,
    # A device's signed exchange refused: replayed, off the clock, or not its signature.
    "replayed": 401,
    "clock_skew": 401,
    "bad_signature": 401,
    # A creating call sent again under its key: made once, its token shown once.
    "already_created": 409,
    "too_large": 413,
    "rate_limited": 429,
    "unavailable": 503,
    # The eventlog gave the request up (it failed on every try) and set it aside.
    "internal": 500,
}


# When to send again something answered ``unavailable`` without a time of its own: a
# dependency that went away (Postgres restarting, the log not answering in time) is back
# within seconds or not soon; a client told one second comes back and is told again.
UNAVAILABLE_RETRY_AFTER = 1.0


class ChipsError(Exception):
    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = {k: v for k, v in extra.items() if v is not None}
        if code == "unavailable":  # every unavailable says when to try again
            self.extra.setdefault("retry_after", UNAVAILABLE_RETRY_AFTER)

    @classmethod
    def database_away(cls) -> ChipsError:
        return cls(
            "unavailable",
            "the database is not reachable right now (restarting or failing over); "
            "send it again shortly, with the same idempotency key for a write",
        )

    def body(self) -> JsonObject:
        return {"code": self.code, "message": self.message, **self.extra}


async def chips_error_handler(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ChipsError)
    retry = exc.extra.get("retry_after")
    headers = {"Retry-After": str(math.ceil(retry))} if isinstance(retry, int | float) else None
    return JSONResponse(exc.body(), status_code=HTTP_STATUS.get(exc.code, 400), headers=headers)


# The database away: a host name that does not resolve, a connection refused or dropped.
# A request that needed it is answered ``unavailable`` with a retry hint, never an
# unhandled 500 (which a client cannot tell from a gateway that is not there).
# (The exceptions are chips_common.db.away's, shared with the eventlog and attachments.)
RETRY_SECONDS = 2


def database_away(doing: str = "answer that") -> ChipsError:
    """The refusal for a request the database did not answer: what could not be done."""
    return ChipsError(
        "unavailable",
        f"Chips cannot {doing} right now: its database does not answer; try again in a few seconds",
        retry_after=RETRY_SECONDS,
    )


async def database_error_handler(request: Request, exc: Exception) -> JSONResponse:
    log.warning("the database did not answer %s: %s", request.url.path, exc)
    return await chips_error_handler(request, database_away())


async def validation_error_handler(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    err = exc.errors()[0]
    if err.get("type") == "json_invalid":
        return JSONResponse(
            {
                "code": "invalid_request",
                "message": "the body is not JSON: send one JSON object "
                "(Content-Type: application/json)",
                "field": "body",
            },
            status_code=400,
        )
    loc = ".".join(str(p) for p in err["loc"] if p not in ("body", "query"))
    return JSONResponse(
        {"code": "invalid_request", "message": f"{loc or 'request'}: {err['msg']}", "field": loc},
        status_code=400,
    )


async def data_error_handler(_: Request, exc: Exception) -> JSONResponse:
    """A value Postgres cannot take (out of range, a NUL): the caller's input, a 400."""
    return JSONResponse(
        {"code": "invalid_request", "message": "a value in the request is out of range"},
        status_code=400,
    )


async def http_error_handler(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's own errors (an unknown path, a method a path does not take) in our shape."""
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 404:
        body = {"code": "not_found", "message": f"no such path: {request.url.path}"}
    elif exc.status_code == 405:
        body = {
            "code": "invalid_request",
            "message": f"{request.method} is not taken by {request.url.path}",
        }
    else:
        body = {"code": "invalid_request", "message": str(exc.detail)}
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


class JsonBodies:
    """Read a body sent without a JSON Content-Type as JSON.

    Every body this API takes is JSON, but ``curl -d`` says
    ``application/x-www-form-urlencoded`` and some clients say nothing; both are read as
    JSON here, so such a request is answered for what it says (or, when it is not JSON,
    with an ``invalid_request`` that names the header) instead of a puzzling refusal.
    """

    READ_AS_JSON = (b"", b"application/x-www-form-urlencoded")
    # Bodies that are a file's bytes, passed on as they came (api/attachments.py).
    RAW_PATHS = ("/v1/uploads",)

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] in ("POST", "PUT", "PATCH")
            and not str(scope["path"]).startswith(self.RAW_PATHS)
        ):
            headers = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
            given = next((v for k, v in scope["headers"] if k == b"content-type"), b"")
            if given.split(b";")[0].strip().lower() in self.READ_AS_JSON:
                scope = {**scope, "headers": [*headers, (b"content-type", b"application/json")]}
        await self.app(scope, receive, send)
