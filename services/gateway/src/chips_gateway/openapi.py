"""The OpenAPI document says what the API answers: its errors too, in their one shape.

FastAPI's document lists 200 and a 422 the gateway never sends (its validation errors
are 400 ``invalid_request``). Every operation here lists instead the errors any route
may answer, each ``{code, message}`` (docs/protocol.md, Errors), checked against the
running gateway by schemathesis in the suite (tests/e2e/test_openapi.py).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["code", "message"],
    "properties": {
        "code": {"type": "string", "description": "what went wrong, for a program"},
        "message": {"type": "string", "description": "what went wrong, for a person"},
        "field": {"type": "string", "description": "the field at fault"},
        "idempotency_key": {"type": "string"},
        "retry_after": {"type": "number", "description": "seconds to wait (rate_limited)"},
    },
    "additionalProperties": True,
}

ERRORS = {
    "400": "invalid_request or invalid_frame: the request cannot be read",
    "401": "unauthorized: no credential, or one not known",
    "403": "forbidden: the credential may not do this",
    "404": "not_found: no such thing (or not one the caller may know of)",
    "409": "stale_file: a newer version was posted meanwhile; agent_elsewhere (with the "
    "agent's room as space_id), room_closed or lead_room: where an agent may be",
    "413": "too_large: the body or the event is past its limit",
    "422": "invalid_event: the event does not fit the catalogue or the room's rules",
    "429": "rate_limited: too many writes; retry_after says when to send again",
    "503": "unavailable: a dependency does not answer; send it again",
}


def error_response(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def document(app: FastAPI) -> dict[str, Any]:
    """The gateway's OpenAPI document, its error answers included (built once)."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(title=app.title, version=app.version, routes=app.routes)
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    components["Error"] = ERROR_SCHEMA
    for methods in schema.get("paths", {}).values():
        for operation in methods.values():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            for status, description in ERRORS.items():
                responses.setdefault(status, error_response(description))
    app.openapi_schema = schema
    return schema


def install(app: FastAPI) -> None:
    app.openapi = lambda: document(app)  # type: ignore[method-assign]
