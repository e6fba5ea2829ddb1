"""Fairness and Origin: a noisy client is limited and closed while others are served.

These run against a gateway of their own, started with small limits and an Origin
allowlist, beside the suite's two gateways (which keep the generous defaults).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import pytest
import websockets

from chips_devstack.stack import Stack
from tests.e2e.client import Api, Socket, key

STRICT = "gateway_strict"
APP_ORIGIN = "https://app.example"


@pytest.fixture(scope="module")
def strict(stack: Stack) -> Iterator[str]:
    stack.extra_env[STRICT] = {
        "CHIPS_SOCKET_WRITE_RATE": "50",
        "CHIPS_SOCKET_WRITE_BURST": "100",
        "CHIPS_CREDENTIAL_WRITE_RATE": "100",
        "CHIPS_CREDENTIAL_WRITE_BURST": "200",
        "CHIPS_RATE_LIMIT_STRIKES": "20",
        "CHIPS_ALLOWED_ORIGINS": APP_ORIGIN,
    }
    stack.start(STRICT)
    stack.wait_ready(STRICT)
    yield stack.url(STRICT)
    stack.stop(STRICT)


async def test_a_flooding_socket_is_told_rate_limited_then_closed_while_a_canary_is_served(
    stack: Stack, api: Api, strict: str
) -> None:
    owner = await api.create_workspace()
    noisy = await api.add_person(owner, "Noisy")
    calm = await api.add_person(owner, "Calm")
    space_id = await api.open_space(owner, "Busy", [noisy.participant_id, calm.participant_id])
    flood = await Socket.open(strict, noisy)
    canary = await Socket.open(strict, calm)
    sent = 0

    async def flood_it() -> None:
        nonlocal sent
        with contextlib.suppress(websockets.ConnectionClosed):
            for i in range(5000):
                await flood.write({"type": "message.post", "space_id": space_id, "text": f"f{i}"})
                sent += 1

    flooding = asyncio.create_task(flood_it())
    canary_keys = []
    for i in range(60):
        k = await canary.write({"type": "message.post", "space_id": space_id, "text": f"c{i}"})
        canary_keys.append(k)
        answer = await canary.answer(k, timeout=30)
        assert answer["frame"] == "ack", answer
    await asyncio.wait_for(flooding, 60)
    await asyncio.wait_for(flood._reader, 10)  # type: ignore[arg-type]

    limited = [f for f in flood.frames if f["frame"] == "error" and f["code"] == "rate_limited"]
    assert limited, "the flooder was never told it was rate limited"
    assert all(f["retry_after"] > 0 for f in limited if "idempotency_key" in f)
    assert limited[-1]["message"].startswith("this socket went on writing")
    assert flood.closed and flood.conn.close_code == 4429
    acked = [f for f in flood.frames if f["frame"] == "ack"]
    assert len(acked) <= 300, "far more than the burst got through"
    assert sent < 5000
    # The canary's writes were all acked, and it is still open.
    assert not canary.closed
    await canary.close()


async def test_http_writes_past_a_credentials_rate_are_429_with_retry_after(
    stack: Stack, api: Api, strict: str
) -> None:
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    client = Api(strict)
    try:
        answers = await asyncio.gather(
            *(
                client.post_event(
                    owner,
                    {
                        "type": "message.post",
                        "space_id": space_id,
                        "text": f"h{i}",
                        "idempotency_key": key("h"),
                    },
                )
                for i in range(400)
            )
        )
    finally:
        await client.close()
    codes = [r.status_code for r in answers]
    assert 200 in codes and 429 in codes
    refused = next(r for r in answers if r.status_code == 429)
    body = refused.json()
    assert body["code"] == "rate_limited" and body["retry_after"] > 0 and body["message"]
    assert int(refused.headers["Retry-After"]) >= 1


async def test_a_foreign_origin_is_refused_and_the_apps_own_are_let_in(
    stack: Stack, api: Api, strict: str
) -> None:
    owner = await api.create_workspace()
    headers = {"Authorization": f"Bearer {owner.token}"}
    for base in (stack.gateway_a, strict):
        url = base.replace("http://", "ws://") + "/v1/ws"
        with pytest.raises(websockets.InvalidStatus) as refused:
            await websockets.connect(
                url,
                origin="https://evil.example",
                additional_headers=headers,  # type: ignore[arg-type]
            )
        assert refused.value.response.status_code == 403
        # Same origin (the people's app, served by the gateway) and no Origin at all.
        for origin in (base, None):
            conn = await websockets.connect(url, origin=origin, additional_headers=headers)  # type: ignore[arg-type]
            await conn.send('{"frame": "hello", "protocol": {"min": 1, "max": 1}}')
            assert '"frame":"hello"' in str(await conn.recv())
            await conn.close()
    # The listed origin, on the gateway that lists it.
    url = strict.replace("http://", "ws://") + "/v1/ws"
    conn = await websockets.connect(url, origin=APP_ORIGIN, additional_headers=headers)  # type: ignore[arg-type]
    await conn.close()


async def test_cors_answers_only_the_listed_origins(stack: Stack, api: Api, strict: str) -> None:
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type",
    }
    client = Api(strict)
    try:
        ok = await client.http.options("/v1/events", headers={**preflight, "Origin": APP_ORIGIN})
        assert ok.status_code == 200
        assert ok.headers["access-control-allow-origin"] == APP_ORIGIN
        assert "access-control-allow-credentials" not in ok.headers
        foreign = await client.http.options(
            "/v1/events", headers={**preflight, "Origin": "https://evil.example"}
        )
        assert "access-control-allow-origin" not in foreign.headers
    finally:
        await client.close()
    # A gateway with no list answers no cross-origin request at all.
    plain = await api.http.options("/v1/events", headers={**preflight, "Origin": APP_ORIGIN})
    assert "access-control-allow-origin" not in plain.headers
