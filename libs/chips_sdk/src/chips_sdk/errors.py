"""Errors as exceptions, each with the code Chips answered (docs/protocol.md, HTTP)."""

from __future__ import annotations

from typing import Any


class ChipsError(Exception):
    """Chips refused something: ``code`` is the protocol's, ``message`` its sentence.

    ``field`` names the culprit when Chips said which; ``idempotency_key`` is the key of the
    write that was refused; ``status`` is the HTTP status, for an HTTP call.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        field: str | None = None,
        idempotency_key: str | None = None,
        status: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.field = field
        self.idempotency_key = idempotency_key
        self.status = status
        self.extra = extra or {}

    @classmethod
    def from_body(cls, body: dict[str, Any], status: int | None = None) -> ChipsError:
        """The exception for an error frame or an HTTP error body, of the code's own class."""
        code = str(body.get("code") or "error")
        known = {"code", "message", "field", "idempotency_key", "frame"}
        kind = BY_CODE.get(code, ChipsError)
        return kind(
            code,
            str(body.get("message") or code),
            field=body.get("field"),
            idempotency_key=body.get("idempotency_key"),
            status=status,
            extra={k: v for k, v in body.items() if k not in known},
        )


class Unauthorized(ChipsError):
    """The token is unknown or was withdrawn (``chips disconnect``): reconnecting won't help."""


class Forbidden(ChipsError):
    """Not yours to do: a room you are not in, another harness's run."""


class NotFound(ChipsError):
    """No such thing (or none you may know of)."""


class InvalidEvent(ChipsError):
    """The event broke a rule, or its state does not take it; ``message`` says why."""


class InvalidRequest(ChipsError):
    """The frame or request was malformed (``invalid_frame`` / ``invalid_request``)."""


class IdempotencyKeyReused(ChipsError):
    """A used key was sent with another request (``idempotency_key_reused``): nothing
    was logged. ``extra["seq"]`` is the first request's seq; a new request takes a new key."""


class Unavailable(ChipsError):
    """Chips could not answer now; the SDK retries writes by itself."""


class ConnectionClosed(ChipsError):
    """The client was closed before the answer came."""


BY_CODE: dict[str, type[ChipsError]] = {
    "unauthorized": Unauthorized,
    "forbidden": Forbidden,
    "not_found": NotFound,
    "invalid_event": InvalidEvent,
    "invalid_frame": InvalidRequest,
    "invalid_request": InvalidRequest,
    "idempotency_key_reused": IdempotencyKeyReused,
    "unavailable": Unavailable,
}
