"""The AsyncAPI 3 document of ``/v1/ws``: the socket's frames, both ways, and its close
codes, served at ``/asyncapi.json`` beside the OpenAPI document.

Built from the same types: an ``event`` frame carries the OpenAPI document's
``EventWrite`` (the catalogue's union by type), an ``ack`` is the ``Ack`` model that
``POST /v1/events`` answers with, an ``error`` the one ``Error`` shape; the schemas are the
OpenAPI document's components, so the two cannot say different things.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import TypeAdapter

from chips_gateway import frames, openapi
from chips_gateway.ws import CLOSE_BEHIND, CLOSE_POLICY, CLOSE_PROTOCOL, CLOSE_RATE, CLOSE_TRY_LATER

CLOSE_CODES = {
    CLOSE_PROTOCOL: "no protocol version in common, or a frame before hello",
    CLOSE_POLICY: "the credential is not (or no longer) valid: do not reconnect with it",
    CLOSE_BEHIND: "too_far_behind: the client read too slowly; reconnect with since",
    CLOSE_RATE: "rate_limited: the client kept writing through its refusals",
    CLOSE_TRY_LATER: "unavailable: try again shortly",
}


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def resolved(node: Any) -> Any:
    """``node`` with each ``{"x-schema": name}`` (``frames.ref``) a reference to the schema."""
    if isinstance(node, dict):
        if "x-schema" in node:
            return ref(node["x-schema"])
        return {k: resolved(v) for k, v in node.items()}
    if isinstance(node, list):
        return [resolved(v) for v in node]
    return node


def frame_schemas() -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Each frame's payload schema, by its message name, from its type
    (``chips_gateway.frames``); and the named schemas they refer to."""
    typed = {**frames.SENT, **frames.RECEIVED}
    keyed, top = TypeAdapter.json_schemas(
        [(name, "serialization", TypeAdapter(kind)) for name, kind in typed.items()],
        ref_template="#/components/schemas/{model}",
    )
    named: dict[str, Any] = resolved(top.get("$defs", {}))
    keyed = resolved(keyed)
    payloads: dict[str, dict[str, Any]] = {}
    for (name, _), schema in keyed.items():
        if "$ref" in schema:  # a TypedDict is a named schema: its payload is its body
            schema = named.pop(schema["$ref"].rsplit("/", 1)[1])
        payloads[name] = schema
    # An ack and an error are the HTTP API's Ack and Error, with the frame's name.
    for name, shape in (("ack", "Ack"), ("error", "Error")):
        payloads[name] = {
            "allOf": [
                {"type": "object", "required": ["frame"], "properties": {"frame": {"const": name}}},
                ref(shape),
            ],
            "title": payloads[name]["title"],
        }
    return payloads, referred(payloads, named)


def referred(payloads: Mapping[str, object], named: Mapping[str, object]) -> dict[str, object]:
    """The named schemas the payloads refer to, and those they refer to in turn. A part a
    frame names another way (``frames.ref``: a logged event is the OpenAPI document's
    ``LoggedEvent``) leaves the schemas of its type unused: they are not published."""
    found: dict[str, object] = {}
    todo: list[object] = list(payloads.values())
    while todo:
        part = todo.pop()
        if isinstance(part, dict):
            target = part.get("$ref")
            if isinstance(target, str):
                name = target.rsplit("/", 1)[1]
                if name in named and name not in found:
                    found[name] = named[name]
                    todo.append(named[name])
            todo.extend(part.values())
        elif isinstance(part, list):
            todo.extend(part)
    return {name: schema for name, schema in named.items() if name in found}


def document(app: FastAPI) -> dict[str, Any]:
    """The socket's AsyncAPI 3.0 document, its schemas shared with the OpenAPI one."""
    payloads, named = frame_schemas()
    schemas = dict(openapi.document(app)["components"]["schemas"])
    for name, part in named.items():
        known = schemas.get(name)
        # The same schema, but for a title pydantic gives no any-JSON value (``JsonValue``).
        if known is not None and {**known, "title": name} != {**part, "title": name}:
            raise ValueError(f"two schemas are named {name}: name the frame's part otherwise")
        schemas.setdefault(name, part)
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Chips socket",
            "version": app.version,
            "description": "One socket per client: send hello, subscribe, write events; "
            "receive the log's events, acks and errors. Close codes: "
            + "; ".join(f"{code} {why}" for code, why in CLOSE_CODES.items()),
        },
        "channels": {
            "socket": {
                "address": "/v1/ws",
                "messages": {name: {"$ref": f"#/components/messages/{name}"} for name in payloads},
            }
        },
        "operations": {
            "send": {
                "action": "receive",
                "channel": {"$ref": "#/channels/socket"},
                "summary": "what a client sends",
                "messages": [{"$ref": f"#/channels/socket/messages/{n}"} for n in frames.SENT],
            },
            "receive": {
                "action": "send",
                "channel": {"$ref": "#/channels/socket"},
                "summary": "what the gateway sends",
                "messages": [{"$ref": f"#/channels/socket/messages/{n}"} for n in frames.RECEIVED],
            },
        },
        "components": {
            "messages": {
                name: {"name": name, "contentType": "application/json", "payload": payload}
                for name, payload in payloads.items()
            },
            "schemas": schemas,
        },
    }


def install(app: FastAPI) -> None:
    @app.get("/asyncapi.json", include_in_schema=False)
    async def asyncapi() -> JSONResponse:
        return JSONResponse(document(app))
