"""What the attachments service's routes share: its parts, a refusal, and the caller.

A :class:`Problem` is a refusal with a code and a sentence, answered by
:func:`problem_response` with its status; :func:`caller` is the principal a request's
token names (docs/adr/0141).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from fastapi import Request
from fastapi.responses import JSONResponse
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_attachments.appender import Appender
from chips_attachments.config import AttachmentsSettings
from chips_attachments.store import Blobs
from chips_common.db.principals import Principal, bearer, principal_for_token
from chips_common.rules.signed_urls import url_key

log = logging.getLogger(__name__)


STATUS = {
    "invalid_request": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "too_large": 413,
    "image_too_large": 422,
    "unreadable_file": 422,
    "not_a_recording": 422,
    "unavailable": 503,
}


class Problem(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# When a client told ``unavailable`` (S3 or the log away) may send again.
RETRY_AFTER_SECONDS = 2


def problem_response(exc: Problem) -> JSONResponse:
    if exc.code == "unavailable":
        return JSONResponse(
            {"code": exc.code, "message": exc.message, "retry_after": RETRY_AFTER_SECONDS},
            status_code=503,
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    return JSONResponse(
        {"code": exc.code, "message": exc.message}, status_code=STATUS.get(exc.code, 400)
    )


async def database_away_response(_: Request, exc: Exception) -> JSONResponse:
    """A request that found Postgres away: ``unavailable``, with a retry hint."""
    log.warning("Postgres is away: %r", exc)
    return problem_response(
        Problem("unavailable", "the database is not reachable right now; send it again shortly")
    )


@dataclass
class Service:
    settings: AttachmentsSettings
    engine: AsyncEngine
    blobs: Blobs
    appender: Appender

    @property
    def keys(self) -> list[bytes]:
        keys = [url_key(self.settings.signing_key)]
        if self.settings.previous_signing_key:
            keys.append(url_key(self.settings.previous_signing_key))
        return keys


async def caller(service: Service, authorization: str | None) -> Principal:
    token = bearer(authorization)
    if token is None:
        raise Problem("unauthorized", "send your token as Authorization: Bearer <token>")
    principal = await principal_for_token(service.engine, token, service.settings.signing_key)
    if principal is None:
        raise Problem("unauthorized", "that token is not known or was withdrawn")
    return principal
