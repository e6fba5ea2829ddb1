"""Size and shape at the edge: what is too big or malformed is answered, never crashes.

Every bad input gets the documented error shape ({code, message}, or an error frame on
the socket), the socket stays up, and no traceback reaches the gateway's log.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
import websockets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chips_devstack.stack import Stack
from tests.e2e.client import Api, Socket, key


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def tracebacks(stack: Stack, name: str) -> int:
    return stack.procs[name].log_path.read_text(errors="replace").count("Traceback")


async def test_a_frame_past_the_limit_is_refused_by_the_socket_library(
    stack: Stack, api: Api
) -> None:
    """Frames up to 16 MiB used to be read and parsed; now the socket closes with 1009
    as the frame's header is read, and the gateway's memory does not grow by the frame."""
    owner = await api.create_workspace()
    pid = stack.procs["gateway_a"].pid
    before = rss_kb(pid)
    for _ in range(4):
        sock = await Socket.open(stack.gateway_a, owner)
        with contextlib.suppress(websockets.ConnectionClosed):
            await sock.conn.send("x" * (8 * 1024 * 1024))
        assert sock._reader is not None
        await asyncio.wait([sock._reader], timeout=10)
        assert sock.closed and sock.conn.close_code == 1009
    grown_mb = (rss_kb(pid) - before) / 1024
    assert grown_mb < 8, f"the gateway grew by {grown_mb:.1f} MB reading refused frames"
    # The gateway still serves.
    assert (await api.http.get("/readyz")).status_code == 200


async def test_a_600_kb_event_is_refused_with_a_clear_error_and_the_path_stays_healthy(
    stack: Stack, api: Api
) -> None:
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    head = await api.head(owner)
    big = {"type": "message.post", "space_id": space_id, "kind": "task"}
    big["task"] = {"goal": "big", "constraints": ["y" * 1999] * 300}  # ~600 kB of lines
    sock = await Socket.open(stack.gateway_a, owner)
    k = await sock.write(big)
    refused = await sock.answer(k)
    assert refused["frame"] == "error" and refused["code"] == "too_large"
    assert "at most" in refused["message"] and refused["limit"] < 1_000_000
    # Over HTTP: the body itself is past the limit, refused before it is read.
    r = await api.post_event(owner, {**big, "idempotency_key": key("big")})
    assert r.status_code == 413 and r.json()["code"] == "too_large", r.text
    # Nothing of it was logged, and the path carries the next write at once.
    k = await sock.write({"type": "message.post", "space_id": space_id, "text": "small"})
    ack = await sock.answer(k)
    assert ack["frame"] == "ack" and ack["seq"] == head + 1
    await sock.close()


async def raw_post(base_url: str, head: str, chunks: int, chunked: bool) -> tuple[int, Any]:
    """POST a body of ``chunks`` MiB (unauthenticated) over a bare TCP connection, reading
    the answer while sending; stops sending once an answer came."""
    host, port = base_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(head.encode())
    answer = asyncio.create_task(reader.read(65536))
    with contextlib.suppress(ConnectionError):
        for _ in range(chunks):
            if answer.done():
                break
            piece = b" " * (1024 * 1024)
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            await writer.drain()
    raw = await asyncio.wait_for(answer, 10)
    # The head and the body may come in separate reads: read on to the declared length.
    while b"\r\n\r\n" not in raw:
        raw += await asyncio.wait_for(reader.read(65536), 10)
    head_part, body = raw.split(b"\r\n\r\n", 1)
    length = next(
        int(line.split(b":", 1)[1])
        for line in head_part.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        more = await asyncio.wait_for(reader.read(65536), 10)
        if not more:
            break
        body += more
    writer.close()
    status = int(raw.split(b" ", 2)[1])
    return status, json.loads(body)


async def test_a_large_body_is_refused_before_authentication(stack: Stack, api: Api) -> None:
    """64 MiB used to be read and parsed before the 401; now 413, having read at most the
    limit, whether the length is declared or the body is chunked."""
    pid = stack.procs["gateway_a"].pid
    before = rss_kb(pid)
    declared = (
        "POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {64 * 1024 * 1024}\r\n\r\n"
    )
    status, body = await raw_post(stack.gateway_a, declared, 64, chunked=False)
    assert status == 413 and body["code"] == "too_large" and body["message"]
    chunked = (
        "POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    )
    status, body = await raw_post(stack.gateway_a, chunked, 64, chunked=True)
    assert status == 413 and body["code"] == "too_large"
    grown_mb = (rss_kb(pid) - before) / 1024
    assert grown_mb < 16, f"the gateway grew by {grown_mb:.1f} MB refusing bodies"


@pytest.mark.parametrize(
    "params",
    [
        {"since": str(10**20)},
        {"since": str(2**63)},
        {"space_id": "\x00"},
        {"since": "-1"},
        {"limit": "x"},
    ],
)
async def test_unreadable_reads_are_answered_with_the_error_model(
    stack: Stack, api: Api, params: dict[str, str]
) -> None:
    owner = await api.create_workspace()
    r = await api.http.get("/v1/events", params=params, headers=api.auth(owner))
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["code"] == "invalid_request" and body["message"]


async def test_the_frames_that_killed_sockets_are_answered_and_the_socket_stays(
    stack: Stack, api: Api
) -> None:
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    logged = tracebacks(stack, "gateway_b")
    sock = await Socket.open(stack.gateway_b, owner, hello=False)
    await sock.conn.send(b"\x00\x01binary")
    await sock.conn.send('{"frame": "hello", "protocol": {"min": 1e999}}')
    await sock.conn.send('{"frame": "hello", "protocol": {"min": NaN}}')
    await sock.conn.send('{"frame": "hello", "protocol": {"min": 99999999999999999999999}}')
    await sock.conn.send('{"frame": "hello", "protocol": "one"}')
    await sock.send({"frame": "hello", "protocol": {"min": 1, "max": 1}})
    await sock.wait_for(lambda f: f["frame"] == "hello")
    for since in (2**63, 2**70, -1, 1.5, True):
        await sock.send({"frame": "subscribe", "workspace_id": owner.workspace_id, "since": since})
    k = await sock.write({"type": "message.post", "space_id": space_id, "text": "still here"})
    assert (await sock.answer(k))["frame"] == "ack"
    errors = [f for f in sock.frames if f["frame"] == "error"]
    assert len(errors) == 10 and {e["code"] for e in errors} == {"invalid_frame"}
    assert not sock.closed
    await sock.close()
    assert tracebacks(stack, "gateway_b") == logged


# --- the fuzzer ---------------------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
FRAME_KINDS = ["hello", "subscribe", "event", "ack", "", "events"]
EVENT_TYPES = ["message.post", "space.created", "message.edited", "run.started", "nope", ""]


def frames(space_id: str, workspace_id: str) -> st.SearchStrategy[str | bytes]:
    event = st.fixed_dictionaries(
        {"type": st.sampled_from(EVENT_TYPES), "idempotency_key": st.text(min_size=1, max_size=12)},
        optional={
            "space_id": st.sampled_from([space_id, "spc_nope", ""]) | values,
            "text": values,
            "kind": st.sampled_from(["text", "task", "status", "summary"]) | values,
            "task": values,
            "members": values,
            "seq": values,
        },
    )
    framed = st.fixed_dictionaries(
        {"frame": st.sampled_from(FRAME_KINDS) | values},
        optional={
            "event": event | values,
            "since": st.integers(min_value=-5, max_value=2**70) | values,
            "workspace_id": st.sampled_from([workspace_id]) | values,
            "protocol": st.fixed_dictionaries({"min": values, "max": values}) | values,
            "accepts": values,
            "idempotency_key": values,
        },
    )
    as_text = framed.map(json.dumps) | values.map(json.dumps)
    odd = st.one_of(
        st.text(max_size=60),
        st.binary(max_size=60),
        st.sampled_from(['{"frame": "hello", "protocol": {"min": 1e999}}', "[" * 2000, "{}" * 3]),
    )
    return st.one_of(as_text, as_text, as_text, odd)


def draw_frames(space_id: str, workspace_id: str, count: int) -> list[str | bytes]:
    drawn: list[str | bytes] = []

    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(frames(space_id, workspace_id))
    def collect(frame: str | bytes) -> None:
        drawn.append(frame)

    collect()
    return drawn


async def test_fuzzed_frames_get_answers_no_traceback_and_no_abnormal_close(
    stack: Stack, api: Api
) -> None:
    """Hypothesis-drawn frames over the socket: every one is followed by a probe that must
    be answered (the socket is alive and reading in order); at the end no traceback is in
    the gateway's log and the socket closes normally."""
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    logged = tracebacks(stack, "gateway_a")
    drawn = draw_frames(space_id, owner.workspace_id, 400)
    sock = await Socket.open(stack.gateway_a, owner)
    for n, frame in enumerate(drawn):
        await sock.conn.send(frame)
        probe = f"probe-{n}"
        await sock.send({"frame": probe})
        await sock.wait_for(lambda f, p=probe: f["frame"] == "error" and p in f["message"])
    assert not sock.closed, f"closed with {sock.conn.close_code}"
    await sock.close()
    assert sock.conn.close_code == 1000
    assert tracebacks(stack, "gateway_a") == logged, stack.procs["gateway_a"].tail(80)
