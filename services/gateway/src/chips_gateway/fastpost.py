"""``POST /v1/events``, the request every message sent over HTTP is, past FastAPI's machinery.

FastAPI answers it through its router (the path matched against the routes before it),
its dependency solver (the context, the caller, the body, the ``traceparent`` header,
each through its own machinery), the body validated into ``JsonObject`` and the answer
into ``Ack`` and serialized again: measured under sequential posts, about a third of the
gateway's CPU per message, more than the work the request asks for (docs/adr/0164).

:class:`FastPost` sits innermost among the gateway's middleware (inside ``Edge``'s checks
and body limit and ``JsonBodies``' Content-Type) and answers the common request itself: a
body that is one JSON object, sent as ``application/json``. It does what the route does,
in the same order (who the caller is, then ``api.events.append_posted``), and answers a
refusal through the app's own exception handlers, so the answer is the route's, byte for
byte. Anything else (another Content-Type, a body that is not a JSON object, or one the
standard library would read differently: an invalid UTF-8, a number past 64 bits, NaN, a
lone surrogate) is handed on to FastAPI as it came, to be answered as before.
"""

from __future__ import annotations

import re
from typing import Any, cast

import orjson
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chips_common.events import JsonObject
from chips_gateway.api.events import append_posted
from chips_gateway.auth import require_principal
from chips_gateway.context import Context

PATH = "/v1/events"
# Twenty digits in a row: maybe an integer past 64 bits, which orjson reads as a float and
# the standard library as an integer (a text with such a run is the route's too).
LONG_NUMBER = re.compile(rb"[0-9]{20}")
JSON = b"application/json"


def first_header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of a header (as Starlette's ``Headers.get`` reads it)."""
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


def json_object(scope: Scope, body: bytes) -> JsonObject | None:
    """The body as FastAPI's route reads it, when that is one JSON object sent as
    ``application/json``; None for anything else (the route answers it)."""
    types = [v for k, v in scope["headers"] if k == b"content-type"]
    if len(types) != 1 or types[0].split(b";")[0].strip().lower() != JSON:
        return None
    if b";" in types[0]:  # a charset or another parameter: the route's to read
        return None
    if LONG_NUMBER.search(body):  # orjson reads an integer past 64 bits as a float
        return None
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return cast(JsonObject, parsed) if isinstance(parsed, dict) else None


class FastPost:
    """Answers ``POST /v1/events`` with a JSON object body itself; hands on the rest."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or scope["path"] != PATH
            or scope.get("root_path")
        ):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        messages: list[Message] = []
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        whole = messages[-1]["type"] == "http.request"
        event = json_object(scope, b"".join(chunks)) if whole else None
        if event is None:
            await self.app(scope, replay(messages, receive), send)
            return
        request = Request(scope, receive)
        try:
            ctx: Context = scope["app"].state.ctx
            authorization = first_header(scope, b"authorization")
            caller = await require_principal(
                ctx.auth,
                authorization.decode("latin-1") if authorization is not None else None,
                ctx.settings.signing_key,
                ctx.known,
            )
            traceparent = first_header(scope, b"traceparent")
            ack = await append_posted(
                ctx,
                caller,
                event,
                traceparent.decode("latin-1") if traceparent is not None else None,
            )
        except Exception as exc:
            handler = handler_of(scope, exc)
            if handler is None:
                raise
            response = await handler(request, exc)
        else:
            body = ack.__pydantic_serializer__.to_json(ack, exclude_unset=True, by_alias=True)
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-length", str(len(body)).encode()),
                        (b"content-type", JSON),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await response(scope, receive, send)


def handler_of(scope: Scope, exc: Exception) -> Any:
    """The app's handler of ``exc`` (its class's nearest), as Starlette's exception
    middleware looks it up: a handler of ``Exception`` (or 500) is the outermost
    middleware's, which answers whatever propagates from here as before."""
    handlers = scope["app"].exception_handlers
    for cls in type(exc).__mro__:
        if cls is Exception:
            return None
        if cls in handlers:
            return handlers[cls]
    return None


def replay(messages: list[Message], receive: Receive) -> Receive:
    """A ``receive`` that gives back what was read first, then reads on."""
    given = iter(list(messages))

    async def again() -> Message:
        message = next(given, None)
        return message if message is not None else await receive()

    return again
