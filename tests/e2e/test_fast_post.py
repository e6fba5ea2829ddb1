"""``POST /v1/events`` answered past FastAPI (``fastpost.FastPost``, docs/adr/0164) answers
as the route does: the same request sent with a ``charset`` parameter on its Content-Type
goes to FastAPI's route, and is the oracle of every answer here."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.e2e.client import Api, key

FAST = {"Content-Type": "application/json"}
ROUTE = {"Content-Type": "application/json; charset=utf-8"}


async def both(api: Api, body: Any, headers: dict[str, str]) -> tuple[httpx.Response, ...]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    fast = await api.http.post("/v1/events", content=raw, headers={**headers, **FAST})
    route = await api.http.post("/v1/events", content=raw, headers={**headers, **ROUTE})
    return fast, route


def same(fast: httpx.Response, route: httpx.Response) -> None:
    assert fast.status_code == route.status_code, (fast.text, route.text)
    assert fast.content == route.content
    assert fast.headers.get("content-type") == route.headers.get("content-type")
    assert fast.headers.get("retry-after") == route.headers.get("retry-after")


async def test_a_post_is_answered_as_the_route_answers_it(api: Api) -> None:
    owner = await api.create_workspace()
    room = await api.open_space(owner, "Fast")
    post = {"type": "message.post", "space_id": room, "text": "hello"}
    k = key()
    fast = await api.http.post(
        "/v1/events",
        content=json.dumps({**post, "idempotency_key": k}),
        headers={**api.auth(owner), **FAST},
    )
    assert fast.status_code == 200, fast.text
    first = fast.json()
    assert first["duplicate"] is False and first["idempotency_key"] == k
    assert set(first) == {"idempotency_key", "seq", "duplicate", "trace_id", "message_id"}
    # The same key again, through the route: its first answer, as the fast path gave it.
    again = await api.http.post(
        "/v1/events",
        content=json.dumps({**post, "idempotency_key": k}),
        headers={**api.auth(owner), **ROUTE},
    )
    assert again.status_code == 200
    assert {**again.json(), "trace_id": None} == {**first, "duplicate": True, "trace_id": None}
    assert list(again.json()) == list(first)
    assert fast.headers["content-type"] == again.headers["content-type"] == "application/json"
    # A duplicate through each: the same bytes but for the trace each request was given.
    k2 = key()
    await api.http.post("/v1/events", json={**post, "idempotency_key": k2}, headers=api.auth(owner))
    fast, route = await both(api, {**post, "idempotency_key": k2}, api.auth(owner))
    assert fast.status_code == route.status_code == 200
    assert {**fast.json(), "trace_id": 0} == {**route.json(), "trace_id": 0}


async def test_refusals_are_the_routes(api: Api) -> None:
    owner = await api.create_workspace()
    room = await api.open_space(owner, "Refusals")
    post = {"type": "message.post", "space_id": room, "text": "hi"}
    cases: list[tuple[Any, dict[str, str]]] = [
        ({**post, "idempotency_key": key()}, {}),  # no token
        ({**post, "idempotency_key": key()}, {"Authorization": "Bearer nope"}),
        ({**post, "idempotency_key": key()}, {"Authorization": "Basic x"}),
        (post, api.auth(owner)),  # no idempotency key
        ({**post, "idempotency_key": ""}, api.auth(owner)),
        ({"space_id": room, "text": "no type", "idempotency_key": key()}, api.auth(owner)),
        ({**post, "type": "no.such", "idempotency_key": key()}, api.auth(owner)),
        ({**post, "space_id": "spc_missing", "idempotency_key": key()}, api.auth(owner)),
        ({**post, "text": "x" * 100_000, "idempotency_key": key()}, api.auth(owner)),
        # Not an object, not JSON, empty: the route's own (FastPost hands them on).
        ([post], api.auth(owner)),
        (b"{not json", api.auth(owner)),
        (b"", api.auth(owner)),
        (b'{"a": NaN}', api.auth(owner)),
        (b'{"type": "message.post", "n": 123456789012345678901234567890}', api.auth(owner)),
    ]
    for body, headers in cases:
        fast, route = await both(api, body, headers)
        same(fast, route)
        assert fast.status_code >= 400, fast.text


async def test_a_traceparent_is_the_posts_parent(api: Api) -> None:
    owner = await api.create_workspace()
    room = await api.open_space(owner, "Traced")
    trace_id = "4bf92f3577b34da6a3ce929d0e736cd0"
    r = await api.http.post(
        "/v1/events",
        json={"type": "message.post", "space_id": room, "text": "t", "idempotency_key": key()},
        headers={**api.auth(owner), "traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"},
    )
    assert r.status_code == 200, r.text
    assert r.json()["trace_id"] == trace_id
