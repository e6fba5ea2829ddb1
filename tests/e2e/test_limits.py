"""Fairness and Origin: a noisy client is limited and closed while others are served.

These run against gateways of their own beside the suite's two (which take no write
limits, conftest.py): one with the product's default limits, and one with small limits and
an Origin allowlist.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator

import httpx
import pytest
import websockets

from chips_devstack.stack import UNLIMITED, Stack
from chips_gateway.config import GatewaySettings
from tests.e2e.client import Api, Socket, key

STRICT = "gateway_strict"
DEFAULTS = "gateway_defaults"
APP_ORIGIN = "https://app.example"


@pytest.fixture(scope="module")
def defaults(stack: Stack) -> Iterator[str]:
    """A gateway with the write limits a deployment gets when it sets none."""
    stack.extra_env[DEFAULTS] = {
        name: str(GatewaySettings.model_fields[name.removeprefix("CHIPS_").lower()].default)
        for name in UNLIMITED
    }
    stack.start(DEFAULTS)
    stack.wait_ready(DEFAULTS)
    yield stack.url(DEFAULTS)
    stack.stop(DEFAULTS)


async def test_at_the_default_limits_a_flood_is_refused_and_closed_while_others_are_acked(
    stack: Stack, api: Api, defaults: str
) -> None:
    """One socket writing as fast as it can is told rate_limited, then closed with 4429
    (never dropped abnormally); meanwhile a person in its room, who is sent what it gets
    logged, and a person of another workspace have every write acked; and its credential
    coming straight back is refused the upgrade, 429 (docs/adr/0065)."""
    owner = await api.create_workspace()
    noisy = await api.add_person(owner, "Noisy")
    calm = await api.add_person(owner, "Calm")
    space_id = await api.open_space(owner, "Busy", [noisy.participant_id, calm.participant_id])
    other = await api.create_workspace(name="Elsewhere")
    elsewhere = await api.open_space(other, "Elsewhere")
    flood = await Socket.open(defaults, noisy)
    canaries = [
        (await Socket.open(defaults, calm), space_id),
        (await Socket.open(defaults, other), elsewhere),
    ]
    await canaries[0][0].subscribe(owner.workspace_id)
    await canaries[0][0].attached()

    async def flood_it() -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            for i in range(3000):
                await flood.write({"type": "message.post", "space_id": space_id, "text": f"f{i}"})

    flooding = asyncio.create_task(flood_it())
    for i in range(20):
        for canary, room in canaries:
            event = {"type": "message.post", "space_id": room, "text": f"c{i}"}
            answer = await canary.settled(event, await canary.write(event))
            assert answer["frame"] == "ack", answer
    await asyncio.wait_for(flooding, 60)
    await flood.wait_closed(60)

    assert flood.conn.close_code == 4429, "closed with the documented code, not dropped"
    assert flood.conn.close_reason == "rate_limited"
    limited = [f for f in flood.frames if f["frame"] == "error" and f["code"] == "rate_limited"]
    assert limited and all(f["retry_after"] > 0 for f in limited if "idempotency_key" in f)
    assert limited[-1]["message"].startswith("this socket went on writing")
    acked = [f for f in flood.frames if f["frame"] == "ack"]
    burst = GatewaySettings.model_fields["socket_write_burst"].default
    assert 0 < len(acked) < 2 * burst, "the burst went through and little more"
    # The calm person in the flood's room was sent what the flood got logged, as ever.
    await canaries[0][0].wait_for_seq(max(f["seq"] for f in acked), timeout=30)
    for canary, _ in canaries:
        assert not canary.closed
        await canary.close()

    # Coming straight back gets nothing: the upgrade itself is refused, with a sentence.
    with pytest.raises(websockets.InvalidStatus) as refused:
        await Socket.open(defaults, noisy)
    answer = refused.value.response
    assert answer.status_code == 429 and int(answer.headers["Retry-After"]) >= 1
    body = json.loads(answer.body)
    assert body["code"] == "rate_limited" and body["retry_after"] > 0 and body["message"]


def bytes_in(base: str) -> dict[str, float]:
    """The gateway's count of bytes read from sockets, by fate (parsed, dropped)."""
    found = {"parsed": 0.0, "dropped": 0.0}
    for line in httpx.get(base + "/metrics", timeout=30).text.splitlines():
        if line.startswith("chips_ws_bytes_in_total{"):
            fate = line.split('fate="', 1)[1].split('"', 1)[0]
            found[fate] = float(line.rsplit(" ", 1)[1])
    return found


async def test_a_flood_is_parsed_only_as_far_as_it_is_served_and_still_told_and_closed(
    stack: Stack, api: Api, defaults: str
) -> None:
    """A socket that sends 20,000 posts at once has the gateway parse only what it serves
    of them (the burst, the refusals, a slice ahead): the rest is held back by TCP and,
    once the gateway's close frame is out, dropped unparsed (docs/adr/0149). The flooder is
    still told rate_limited and closed 4429, and every write it was acked is logged."""
    owner = await api.create_workspace()
    noisy = await api.add_person(owner, "Noisy")
    calm = await api.add_person(owner, "Calm")
    space_id = await api.open_space(owner, "Busy", [noisy.participant_id, calm.participant_id])
    watcher = await Socket.open(defaults, calm)
    await watcher.subscribe(owner.workspace_id)
    await watcher.attached()
    before = bytes_in(defaults)
    flood = await Socket.open(defaults, noisy)
    frames = [
        json.dumps(
            {
                "frame": "event",
                "event": {
                    "type": "message.post",
                    "space_id": space_id,
                    "text": f"flood {i}",
                    "idempotency_key": key(),
                },
            }
        )
        for i in range(20_000)
    ]
    with contextlib.suppress(websockets.ConnectionClosed):
        for frame in frames:
            await flood.conn.send(frame)
    await flood.wait_closed(60)
    after = bytes_in(defaults)

    assert flood.conn.close_code == 4429 and flood.conn.close_reason == "rate_limited"
    limited = [f for f in flood.frames if f["frame"] == "error" and f["code"] == "rate_limited"]
    assert limited and limited[-1]["message"].startswith("this socket went on writing")
    sent = sum(len(f) for f in frames)
    parsed = after["parsed"] - before["parsed"]
    assert 0 < parsed < sent / 10, f"parsed {parsed:.0f} of the {sent} bytes sent"
    assert after["dropped"] > before["dropped"], "what came after the close frame was dropped"
    acked = [f["seq"] for f in flood.frames if f["frame"] == "ack"]
    assert acked, "the burst went through"
    await watcher.wait_for_seq(max(acked), timeout=30)
    logged = {f["event"]["seq"] for f in watcher.frames if f["frame"] == "event"}
    assert set(acked) <= logged, "every acked write reached the log and its room"
    await watcher.close()


async def test_of_a_floods_burst_only_the_first_few_writes_reach_the_log(
    stack: Stack, api: Api, defaults: str
) -> None:
    """A socket that sends 20,000 posts at once is let its burst, but only the first
    ``socket_log_burst`` go to the log at once, the rest at its rate; when its refusals
    close it, what is still queued at the gateway is refused and never logged
    (docs/adr/0155). Counted in the log itself: the log burst, and no more past it than
    the socket was let take past its burst (far fewer than the burst), each acked; the
    rest of what it was let take was answered rate_limited, not logged."""
    owner = await api.create_workspace()
    noisy = await api.add_person(owner, "Noisy")
    space_id = await api.open_space(owner, "Busy", [noisy.participant_id])
    head = await api.head(owner)
    flood = await Socket.open(defaults, noisy)
    frames = [
        json.dumps(
            {
                "frame": "event",
                "event": {
                    "type": "message.post",
                    "space_id": space_id,
                    "text": f"flood {i}",
                    "idempotency_key": f"flood-{i}",
                },
            }
        )
        for i in range(20_000)
    ]
    with contextlib.suppress(websockets.ConnectionClosed):
        for frame in frames:
            await flood.conn.send(frame)
    # Closed once every write it sent to the log is answered: the log holds them all now.
    await flood.wait_closed(60)
    assert flood.conn.close_code == 4429 and flood.conn.close_reason == "rate_limited"

    logged = [
        e["text"].replace("flood ", "flood-")
        for e in await api.read(owner, since=head, space_id=space_id)
        if e["type"] == "message.post"
    ]
    answered = {f["idempotency_key"]: f for f in flood.frames if "idempotency_key" in f}
    refused_at_once = {
        k for k, f in answered.items() if f.get("message", "").startswith("too many writes")
    }
    taken = set(answered) - refused_at_once
    acked = {k for k, f in answered.items() if f["frame"] == "ack"}
    not_logged = [answered[k] for k in taken - acked]
    fields = GatewaySettings.model_fields
    burst, log_burst = fields["socket_write_burst"].default, fields["socket_log_burst"].default
    assert set(logged) == acked, "what was logged is what was acked"
    # Its bucket and the pace to the log refill at the same rate, so past the first
    # log_burst at most as many reached the log as it was let take past its burst.
    assert len(logged) <= log_burst + len(taken) - burst + 2, (
        f"{len(logged)} of the flood's posts reached the log, of {len(taken)} taken"
    )
    assert len(logged) < burst, f"{len(logged)} of the flood's posts reached the log"
    assert all(
        f["code"] == "rate_limited" and "was not logged" in f["message"] and f["retry_after"] >= 1
        for f in not_logged
    ), "the rest of what it was let take was refused, not logged"


def rate_limit_takes(base: str) -> float:
    """The gateway's count of takes from the credentials' write buckets in Redis."""
    for line in httpx.get(base + "/metrics", timeout=30).text.splitlines():
        if line.startswith("chips_gateway_rate_limit_takes_total "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def masked_frame(text: str) -> bytes:
    """A client's text frame as bytes on the wire, masked with a zero key."""
    payload = text.encode()
    assert 126 <= len(payload) < 65536
    return bytes([0x81, 0x80 | 126]) + len(payload).to_bytes(2, "big") + bytes(4) + payload


async def test_a_floods_burst_read_at_once_costs_its_credential_a_few_takes_from_redis(
    stack: Stack, api: Api, defaults: str
) -> None:
    """A socket's writes already read and parsed are taken from its credential's bucket
    in Redis together, as far as its own bucket lets them through (docs/adr/0158): a
    flood's burst of 100, arriving in one write, costs a few round trips to Redis, where
    it cost one every two writes (50) and the gateway read the burst no faster than Redis
    answered. Counted by the gateway's own metric (52 takes without the change); the
    flood is still refused and closed, and no more of it logged than before."""
    owner = await api.create_workspace()
    noisy = await api.add_person(owner, "Noisy")
    space_id = await api.open_space(owner, "Busy", [noisy.participant_id])
    head = await api.head(owner)
    flood = await Socket.open(defaults, noisy)
    wire = b"".join(
        masked_frame(
            json.dumps(
                {
                    "frame": "event",
                    "event": {
                        "type": "message.post",
                        "space_id": space_id,
                        "text": f"a flood's post number {i}",
                        "idempotency_key": f"flood-{i}",
                    },
                }
            )
        )
        for i in range(2_000)
    )
    before = rate_limit_takes(defaults)
    # One write of every frame at once, as a flood from a fast client arrives.
    flood.conn.transport.write(wire)
    await flood.wait_closed(60)
    takes = rate_limit_takes(defaults) - before
    assert flood.conn.close_code == 4429 and flood.conn.close_reason == "rate_limited"
    burst = GatewaySettings.model_fields["socket_write_burst"].default
    log_burst = GatewaySettings.model_fields["socket_log_burst"].default
    taken = [
        f
        for f in flood.frames
        if "idempotency_key" in f and not f.get("message", "").startswith("too many writes")
    ]
    assert len(taken) >= burst, "the socket was let its whole burst"
    # One take covers what is read by then; a slow machine may let a take's tokens expire
    # (a quarter of a second) before the burst is read, and take again: a few, never 50.
    assert takes <= 10, f"{takes:.0f} takes from Redis for a burst of {len(taken)} writes"
    logged = [
        e
        for e in await api.read(owner, since=head, space_id=space_id)
        if e["type"] == "message.post"
    ]
    assert len(logged) <= log_burst, f"{len(logged)} of the flood's posts reached the log"


async def test_a_sockets_writes_past_its_places_in_flight_are_queued_and_logged_in_order(
    stack: Stack, api: Api
) -> None:
    """Many more writes pipelined than may be in flight at once: every one is acked, and
    logged in the order it was sent (the suite's gateways take no write limits)."""
    owner = await api.create_workspace()
    writer = await Socket.open(stack.gateway_a, owner)
    space_id = await api.open_space(owner, "Pipelined")
    many = 10 * GatewaySettings.model_fields["ws_max_inflight_writes"].default
    keys = [
        await writer.write({"type": "message.post", "space_id": space_id, "text": f"p{i}"})
        for i in range(many)
    ]
    answers = [await writer.answer(k, timeout=60) for k in keys]
    assert all(a["frame"] == "ack" for a in answers), [a for a in answers if a["frame"] != "ack"]
    seqs = [a["seq"] for a in answers]
    assert seqs == sorted(seqs) and len(set(seqs)) == many
    await writer.close()


@pytest.fixture(scope="module")
def strict(stack: Stack) -> Iterator[str]:
    stack.extra_env[STRICT] = {
        "CHIPS_SOCKET_WRITE_RATE": "50",
        "CHIPS_SOCKET_WRITE_BURST": "100",
        # A slow refill, so that a burst of HTTP writes outruns it however slow the machine.
        "CHIPS_CREDENTIAL_WRITE_RATE": "5",
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
    for i in range(60):
        event = {"type": "message.post", "space_id": space_id, "text": f"c{i}"}
        answer = await canary.settled(event, await canary.write(event))
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
    # The canary's writes were all acked, and it is still open.
    assert not canary.closed
    await canary.close()


async def test_http_writes_past_a_credentials_rate_are_429_with_retry_after(
    stack: Stack, api: Api, strict: str
) -> None:
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    client = Api(strict)
    # Many at once, each waiting as long as it takes for a connection (a loaded machine).
    await client.http.aclose()
    client.http = httpx.AsyncClient(
        base_url=strict,
        timeout=httpx.Timeout(60, pool=None),
        limits=httpx.Limits(max_connections=64),
    )
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
