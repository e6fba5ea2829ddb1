"""Pings, silence and slow readers (spec/websocket.md, Staying alive, and falling behind).

These run against gateways of their own started with small numbers, since all four are
configuration: one with a short queue, one with a short silence timeout.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os

import pytest
import websockets

from tests.e2e.client import Api, Socket


def start_gateway(stack, name: str, env: dict[str, str]) -> str:
    stack.extra_env[name] = env
    stack.start(name)
    stack.wait_ready(name)
    return str(stack.url(name))


@pytest.fixture(scope="module")
def short_queue(stack) -> str:
    return start_gateway(stack, "gateway_short_queue", {"CHIPS_WS_MAX_QUEUED_FRAMES": "20"})


@pytest.fixture(scope="module")
def short_silence(stack) -> str:
    return start_gateway(
        stack,
        "gateway_short_silence",
        {
            "CHIPS_WS_PING_INTERVAL_SECONDS": "0.5",
            "CHIPS_WS_SILENCE_TIMEOUT_SECONDS": "2",
        },
    )


async def test_a_reader_too_far_behind_is_told_and_closed(
    stack, api: Api, short_queue: str
) -> None:
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    url = short_queue.replace("http://", "ws://") + "/v1/ws"
    slow = await websockets.connect(
        url, additional_headers={"Authorization": f"Bearer {harness.token}"}, max_queue=1
    )
    await slow.send(json.dumps({"frame": "hello", "protocol": {"min": 1, "max": 1}}))
    assert json.loads(await slow.recv())["frame"] == "hello"
    await slow.send(json.dumps({"frame": "subscribe", "workspace_id": owner.workspace_id}))
    await asyncio.sleep(0.3)

    writer = await Socket.open(stack.gateway_a, owner)
    words = "x" * 30_000
    keys = [
        await writer.write({"type": "message.post", "space_id": space_id, "text": words})
        for _ in range(400)
    ]
    assert (await writer.answer(keys[-1], timeout=60))["frame"] == "ack"

    frames = []
    with pytest.raises(websockets.ConnectionClosed) as closed:
        while True:
            frames.append(json.loads(await asyncio.wait_for(slow.recv(), 30)))
    assert frames[-1]["frame"] == "error" and frames[-1]["code"] == "too_far_behind"
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4008
    delivered = [f["event"]["seq"] for f in frames if f["frame"] == "event"]
    assert len(delivered) < 400, "the slow reader was cut off, not buffered for"
    await writer.close()


async def test_a_silent_socket_is_closed(stack, api: Api, short_silence: str) -> None:
    """A client that never answers pings is closed after the silence timeout (2 s here)."""
    owner = await api.create_workspace()
    port = int(short_silence.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    nonce = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            f"GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {nonce}\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: Bearer {owner.token}\r\n\r\n"
        ).encode()
    )
    await writer.drain()
    status = await reader.readline()
    assert b"101" in status
    started = asyncio.get_running_loop().time()
    # Read whatever comes (pings, then a close) but never answer; EOF means we were closed.
    while await asyncio.wait_for(reader.read(4096), 10):
        pass
    elapsed = asyncio.get_running_loop().time() - started
    assert 1.0 < elapsed < 8, f"closed after {elapsed:.1f} s"
    writer.close()


async def test_a_client_that_answers_pings_stays(stack, api: Api, short_silence: str) -> None:
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    sock = await Socket.open(short_silence, owner)
    await sock.subscribe(owner.workspace_id)
    await asyncio.sleep(4)
    assert not sock.closed
    seq = await api.say(owner, space_id, "still here?")
    await sock.wait_for_seq(seq)
    await sock.close()
