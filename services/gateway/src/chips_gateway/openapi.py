"""The OpenAPI document says what the API takes and answers, so a client can be generated.

FastAPI's document is built from the routes' types; this adds what it cannot see: the
body of ``POST /v1/events`` (one of the catalogue's events, told apart by ``type``, with
its ``idempotency_key``), the security schemes, the errors every operation may answer in
their one shape (FastAPI's 422 is dropped: the gateway's validation errors are 400
``invalid_request``), the ``Retry-After`` header of a 429, and operation ids that are the
routes' names. Checked against the running gateway by schemathesis and by a generated
client in the suite (tests/e2e/test_openapi.py).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

import orjson
from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model
from pydantic.json_schema import models_json_schema

from chips_common.events import CATALOGUE, JsonObject
from chips_gateway.answers import ABSENT, ANSWERS

ERROR_SCHEMA: JsonObject = {
    "type": "object",
    "title": "Error",
    "required": ["code", "message"],
    "properties": {
        "code": {"type": "string", "description": "what went wrong, for a program"},
        "message": {"type": "string", "description": "what went wrong, for a person"},
        "field": {"type": "string", "description": "the field at fault"},
        "idempotency_key": {"type": "string", "description": "the refused write's key"},
        "retry_after": {"type": "number", "description": "seconds to wait (rate_limited)"},
        "seq": {
            "type": ["integer", "null"],
            "description": "idempotency_key_reused: the seq of the first request under the key",
        },
        "space_id": {"type": "string", "description": "agent_elsewhere: the agent's room"},
    },
    "additionalProperties": True,
}

ERRORS = {
    "400": "invalid_request or invalid_frame: the request cannot be read",
    "401": "unauthorized: no credential, or one not known",
    "403": "forbidden: the credential may not do this",
    "404": "not_found: no such thing (or not one the caller may know of)",
    "405": "invalid_request: the path does not take this method",
    "409": "stale_file: a newer version was posted meanwhile; agent_elsewhere (with the "
    "agent's room as space_id), room_closed, lead_room or not_connected; already_created: "
    "a creating call sent again under its Idempotency-Key (its token was shown once)",
    "413": "too_large: the body or the event is past its limit",
    "422": "invalid_event: the event does not fit the catalogue or the room's rules; "
    "idempotency_key_reused (with seq): the key was used for another request",
    "429": "rate_limited: too many writes; retry_after and Retry-After say when to send again",
    "500": "internal: the log set the request aside after failing on it every time",
    "503": "unavailable: a dependency does not answer; send it again",
}

RETRY_AFTER = {
    "Retry-After": {
        "description": "whole seconds to wait before sending again",
        "schema": {"type": "integer", "minimum": 0},
    }
}

SECURITY_SCHEMES = {
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "a person token (chips_pt_…) or a harness token (chips_at_…)",
    },
    "operator": {
        "type": "apiKey",
        "in": "header",
        "name": "X-Chips-Operator-Secret",
        "description": "the operator's secret: only for creating a workspace",
    },
}


class AgentActor(BaseModel):
    """A harness speaking as one of its agents (docs/adr/0070)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["agent"]
    id: str = Field(pattern=r"^agt_", max_length=100)
    harness_id: str | None = None


def event_writes() -> tuple[dict[str, Any], dict[str, Any]]:
    """The body of ``POST /v1/events`` (and of the socket's ``event`` frame): one of the
    events a client may write, discriminated by ``type``, each with its key. Returns the
    union's schema and the named schemas it refers to."""
    writes = [
        create_model(
            cls.__name__,
            __base__=cls,
            __doc__=cls.__doc__,
            idempotency_key=(
                str,
                Field(min_length=1, max_length=200, description="the write's idempotency key"),
            ),
            actor=(AgentActor | None, None),
        )
        for cls in CATALOGUE.values()
        if cls.client_writable
    ]
    union: Any = Annotated[Union[tuple(writes)], Field(discriminator="type")]  # noqa: UP007
    schema = TypeAdapter(union).json_schema(ref_template="#/components/schemas/{model}")
    schema["title"] = "EventWrite"
    # Two models of one name in two modules are named by their module (``RunsOption``),
    # not by pydantic's ``chips_common__events__runs__Option``.
    text = orjson.dumps(schema).decode()
    for name in list(schema.get("$defs", {})):
        if "__" in name:
            *_, module, model = name.split("__")
            text = text.replace(f'/{name}"', f'/{module.title()}{model}"')
            text = text.replace(f'"{name}":', f'"{module.title()}{model}":')
    schema = orjson.loads(text)
    named: dict[str, Any] = schema.pop("$defs", {})
    for name, part in named.items():
        part["title"] = name  # a generator names a model by its title
    return schema, named


def answer_schemas() -> dict[str, Any]:
    """The named schemas of every route's answer model (``chips_gateway.answers``)."""
    _, top = models_json_schema(
        [(model, "serialization") for model in ANSWERS.values()],
        ref_template="#/components/schemas/{model}",
    )
    named: dict[str, Any] = top.get("$defs", {})
    for name, part in named.items():
        part["title"] = name
        for field in part.get("properties", {}).values():
            if field.pop(ABSENT, False):  # left out when it does not apply, never null
                field.pop("default", None)
                kinds = [k for k in field.pop("anyOf", []) if k != {"type": "null"}]
                field.update(kinds[0] if len(kinds) == 1 else {"anyOf": kinds})
    return named


def without_defaults(node: Any) -> Any:
    """A schema without its ``default``s (a write's model and an answer's, read alike)."""
    if isinstance(node, dict):
        return {k: without_defaults(v) for k, v in node.items() if k != "default"}
    if isinstance(node, list):
        return [without_defaults(v) for v in node]
    return node


def type_answers(paths: dict[str, Any], components: dict[str, Any]) -> None:
    """Each operation's JSON success body is its answer model, by name.

    A schema of one name the writes already define must be the same schema: two that
    differed would leave a client with two meanings for one name.
    """
    for name, part in answer_schemas().items():
        known = components.get(name)
        if known is not None:
            known.setdefault("title", name)  # a body's any-JSON value (``JsonValue``) has none
            if without_defaults(known) != without_defaults(part):
                raise ValueError(f"two schemas are named {name}: name the answer's model otherwise")
        components.setdefault(name, part)
    for methods in paths.values():
        for operation in methods.values():
            model = ANSWERS.get(operation.get("operationId", ""))
            if model is None:
                continue
            for status, response in operation.get("responses", {}).items():
                body = response.get("content", {}).get("application/json")
                if status.startswith("2") and body is not None:
                    body["schema"] = {"$ref": f"#/components/schemas/{model.__name__}"}


def error_response(description: str) -> JsonObject:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def operation_id(route: APIRoute) -> str:
    """An operation is named after its route's function: ``read_events``, not
    ``read_events_v1_events_get``, so a generated client's names read well."""
    return route.name


def document(app: FastAPI) -> dict[str, Any]:
    """The gateway's OpenAPI document, completed (built once)."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
    )
    parts = schema.setdefault("components", {})
    parts["securitySchemes"] = SECURITY_SCHEMES
    components = parts.setdefault("schemas", {})
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    components["Error"] = ERROR_SCHEMA
    writes, named = event_writes()
    components.update(named)
    components["EventWrite"] = writes
    schema["security"] = [{"bearer": []}]
    paths = schema.get("paths", {})
    type_answers(paths, components)
    paths["/v1/events"]["post"]["requestBody"] = {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/EventWrite"}}},
    }
    paths["/v1/workspaces"]["post"]["security"] = [{"operator": []}]
    # An invite link, a pairing code, a device's signed exchange or a passkey's answer is
    # the credential itself (and a passkey's challenge is asked for before signing in).
    for path in (
        "/v1/invites/preview",
        "/v1/invites/accept",
        "/v1/sessions",
        "/v1/passkeys/challenge",
        "/v1/passkeys/sign-in",
    ):
        if path in paths:
            paths[path]["post"]["security"] = []
    # Sign-in with the team's identity provider is how a browser gets a device at all.
    for path, method in (
        ("/v1/oidc", "get"),
        ("/v1/oidc/start", "post"),
        ("/v1/oidc/callback", "get"),
    ):
        if path in paths:
            paths[path][method]["security"] = []
    for methods in paths.values():
        for operation in methods.values():
            # The credential is the security scheme's, not a parameter of each operation.
            operation["parameters"] = [
                p for p in operation.get("parameters", ()) if p["name"].lower() != "authorization"
            ]
            if not operation["parameters"]:
                del operation["parameters"]
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            for status, description in ERRORS.items():
                responses.setdefault(status, error_response(description))
            responses["429"]["headers"] = RETRY_AFTER
    app.openapi_schema = schema
    return schema


def install(app: FastAPI) -> None:
    app.openapi = lambda: document(app)  # type: ignore[method-assign]
