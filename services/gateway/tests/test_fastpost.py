"""What ``FastPost`` answers itself and what it hands on to FastAPI as it came."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from chips_gateway.fastpost import FastPost, handler_of, json_object


def scope(
    body_type: bytes | None = b"application/json", method: str = "POST", path: str = "/v1/events"
) -> Scope:
    headers = [(b"content-type", body_type)] if body_type is not None else []
    return {"type": "http", "method": method, "path": path, "headers": headers}


@pytest.mark.parametrize(
    ("content_type", "body", "read"),
    [
        (b"application/json", b'{"type": "message.post"}', {"type": "message.post"}),
        (b"Application/JSON", b'{"a": [1, 2.5, null]}', {"a": [1, 2.5, None]}),
        (b"application/json", b'{"a": 1, "a": 2}', {"a": 2}),  # the last, as json.loads
        # The route's own: not one object, not JSON as orjson reads it as json.loads does.
        (b"application/json", b"[1]", None),
        (b"application/json", b"", None),
        (b"application/json", b"{nope", None),
        (b"application/json", b'{"a": NaN}', None),
        (b"application/json", b'{"a": 123456789012345678901234567890}', None),
        (b"application/json", b'\xef\xbb\xbf{"a": 1}', None),  # a BOM json.loads skips
        (b"application/json", b'{"a": "\\ud800"}', None),  # a lone surrogate
        (b"application/json", b'{"a": 1e400}', None),
        (b"application/json; charset=utf-8", b'{"a": 1}', None),
        (b"application/vnd.x+json", b'{"a": 1}', None),
        (b"text/plain", b'{"a": 1}', None),
        (None, b'{"a": 1}', None),
    ],
)
def test_only_a_json_object_sent_as_json_is_read_here(
    content_type: bytes | None, body: bytes, read: Any
) -> None:
    assert json_object(scope(content_type), body) == read


def test_two_content_types_are_the_routes() -> None:
    s = scope()
    s["headers"].append((b"content-type", b"application/json"))
    assert json_object(s, b'{"a": 1}') is None


class Downstream:
    """The app FastPost hands on to: what it was given, and a 204."""

    def __init__(self) -> None:
        self.calls: list[tuple[Scope, list[Message]]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        got: list[Message] = []
        while True:
            message = await receive()
            got.append(message)
            if not message.get("more_body"):
                break
        self.calls.append((scope, got))
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def receiver(chunks: list[bytes]) -> Receive:
    messages = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
        for i, c in enumerate(chunks)
    ]

    async def receive() -> Message:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    return receive


async def sent_to(app: Any, s: Scope, chunks: list[bytes]) -> list[Message]:
    out: list[Message] = []

    async def send(message: Message) -> None:
        out.append(message)

    await app(s, receiver(chunks), send)
    return out


@pytest.mark.parametrize(
    ("s", "chunks"),
    [
        (scope(), [b"[", b"1]"]),  # read whole, then handed on whole
        (scope(b"text/plain"), [b'{"a": 1}']),
        (scope(method="GET"), [b""]),
        (scope(path="/v1/spaces"), [b'{"a": 1}']),
    ],
)
async def test_the_rest_is_handed_on_as_it_came(s: Scope, chunks: list[bytes]) -> None:
    down = Downstream()
    answer = await sent_to(FastPost(down), s, chunks)
    assert answer[0]["status"] == 204
    [(given_scope, given)] = down.calls
    assert given_scope is s
    assert b"".join(m["body"] for m in given) == b"".join(chunks)
    assert not given[-1]["more_body"]


class App:
    def __init__(self, handlers: dict[Any, Any]) -> None:
        self.exception_handlers = handlers


def test_a_refusal_is_answered_by_the_handler_starlettes_middleware_would_pick() -> None:
    class Refused(ValueError):
        pass

    def mine(*_: Any) -> None: ...
    def everything(*_: Any) -> None: ...

    s = {**scope(), "app": App({ValueError: mine, Exception: everything})}
    assert handler_of(s, Refused()) is mine
    # Exception's handler is the outermost middleware's: what reaches it propagates.
    assert handler_of(s, RuntimeError()) is None
    assert handler_of({**scope(), "app": App({})}, Refused()) is None
