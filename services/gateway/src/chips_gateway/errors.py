"""Errors a client is told: a code and a sentence, never a stack trace."""

from __future__ import annotations

import math
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

HTTP_STATUS = {
    "invalid_frame": 400,
    "invalid_request": 400,
    "invalid_event": 422,
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "stale_file": 409,
    "too_large": 413,
    "rate_limited": 429,
    "unavailable": 503,
}


class ChipsError(Exception):
    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = {k: v for k, v in extra.items() if v is not None}

    def body(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.extra}


async def chips_error_handler(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ChipsError)
    retry = exc.extra.get("retry_after")
    headers = {"Retry-After": str(math.ceil(retry))} if isinstance(retry, int | float) else None
    return JSONResponse(exc.body(), status_code=HTTP_STATUS.get(exc.code, 400), headers=headers)


async def validation_error_handler(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    err = exc.errors()[0]
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
