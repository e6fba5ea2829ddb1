"""Pings, silence and slow readers (docs/product/websocket.md, Staying alive, and falling behind).

These run against gateways of their own started with small numbers, since all four are
configuration: one with a short queue, one with a short silence timeout.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import struct

import pytest

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
    """A consumer more than the queue's frames behind gets too_far_behind and is closed.

    The reader is a bare socket that says hello, subscribes, then reads nothing (with a small
    receive buffer, so the backlog stays in the server) while 400 large messages are posted.
    """
    owner = await api.create_workspace()
    harness, space_id = await api.connect_harness(owner, "Scout")
    port = int(short_queue.rsplit(":", 1)[1])
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    raw.connect(("127.0.0.1", port))
    raw.setblocking(False)
    reader, writer = await asyncio.open_connection(sock=raw)
    await upgrade(reader, writer, port, harness.token)
    writer.write(client_frame({"frame": "hello", "protocol": {"min": 1, "max": 1}}))
    writer.write(client_frame({"frame": "subscribe", "workspace_id": owner.workspace_id}))
    await writer.drain()
    await asyncio.sleep(0.5)

    author = await Socket.open(stack.gateway_a, owner)
    words = "x" * 30_000
    keys = [
        await author.write({"type": "message.post", "space_id": space_id, "text": words})
        for _ in range(400)
    ]
    assert (await author.answer(keys[-1], timeout=60))["frame"] == "ack"

    frames, close_code = await read_server_frames(reader)
    texts = [json.loads(payload) for payload in frames]
    assert texts[0]["frame"] == "hello"
    assert texts[-1]["frame"] == "error" and texts[-1]["code"] == "too_far_behind"
    assert close_code == 4008
    delivered = [f["event"]["seq"] for f in texts if f["frame"] == "event"]
    assert len(delivered) < 400, "the slow reader was cut off, not buffered for"
    assert delivered == sorted(delivered)
    writer.close()
    await author.close()


async def upgrade(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int, token: str
) -> None:
    nonce = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            f"GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {nonce}\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: Bearer {token}\r\n\r\n"
        ).encode()
    )
    await writer.drain()
    assert b"101" in await reader.readline()
    while (await reader.readline()) not in (b"\r\n", b""):
        pass


def client_frame(message: dict[str, object]) -> bytes:
    """One masked text frame, as RFC 6455 asks of a client."""
    payload = json.dumps(message).encode()
    mask = os.urandom(4)
    head = bytes([0x81])
    if len(payload) < 126:
        head += bytes([0x80 | len(payload)])
    else:
        head += bytes([0x80 | 126]) + struct.pack("!H", len(payload))
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def read_server_frames(reader: asyncio.StreamReader) -> tuple[list[bytes], int | None]:
    """Every text frame the server sent until its close frame, and the close code."""
    texts: list[bytes] = []
    while True:
        first, second = await asyncio.wait_for(reader.readexactly(2), 30)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack("!H", await reader.readexactly(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", await reader.readexactly(8))[0]
        payload = await reader.readexactly(length)
        opcode = first & 0x0F
        if opcode == 0x1:
            texts.append(payload)
        elif opcode == 0x8:
            return texts, struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None


async def silent_socket(
    base_url: str, token: str
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A socket upgraded to a WebSocket that will never answer a ping."""
    port = int(base_url.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    nonce = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            f"GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {nonce}\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: Bearer {token}\r\n\r\n"
        ).encode()
    )
    await writer.drain()
    status = await reader.readline()
    assert b"101" in status
    return reader, writer


async def until_closed(reader: asyncio.StreamReader) -> None:
    """Read whatever comes (pings, then a close) but never answer; EOF: we were closed."""
    while await asyncio.wait_for(reader.read(4096), 10):
        pass


async def test_a_silent_socket_is_closed(stack, api: Api, short_silence: str) -> None:
    """A client that never answers pings is closed after the silence timeout (2 s here)."""
    owner = await api.create_workspace()
    reader, writer = await silent_socket(short_silence, owner.token)
    started = asyncio.get_running_loop().time()
    await until_closed(reader)
    elapsed = asyncio.get_running_loop().time() - started
    assert 1.0 < elapsed < 8, f"closed after {elapsed:.1f} s"
    writer.close()


async def test_a_client_that_answers_pings_stays(stack, api: Api, short_silence: str) -> None:
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    sock = await Socket.open(short_silence, owner)
    await sock.subscribe(owner.workspace_id)
    # Silent sockets opened one after the other after it are each closed once the silence
    # timeout has passed: after two, the socket that answers pings has outlived the timeout
    # twice over, and stays.
    for _ in range(2):
        reader, writer = await silent_socket(short_silence, owner.token)
        await until_closed(reader)
        writer.close()
        assert not sock.closed
    seq = await api.say(owner, space_id, "still here?")
    await sock.wait_for_seq(seq)
    await sock.close()
