"""A socket's writes: a queue of its own, a few in flight, in order (docs/adr/0065).

The session is driven with a socket and an appender of the test's own, so that the test
decides when the log answers.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from chips_common.append import AppendAnswer
from chips_common.ids import new_id
from chips_gateway.auth import Principal
from chips_gateway.config import GatewaySettings
from chips_gateway.intake import PARSED_WAITING
from chips_gateway.sockets import Sockets
from chips_gateway.ws import CLOSE_RATE, Session

pytestmark = pytest.mark.unit


class Appender:
    """Keeps each request's future for the test to answer."""

    timeout = 10.0

    def __init__(self) -> None:
        self.sent: list[tuple[str, asyncio.Future[AppendAnswer]]] = []
        self.sending = asyncio.Event()

    async def send(self, *args: Any) -> asyncio.Future[AppendAnswer]:
        future: asyncio.Future[AppendAnswer] = asyncio.get_running_loop().create_future()
        self.sent.append((args[3], future))
        self.sending.set()
        return future

    def expire(self, future: asyncio.Future[AppendAnswer]) -> None:
        pass

    def waiting(self) -> list[tuple[str, asyncio.Future[AppendAnswer]]]:
        return [(k, f) for k, f in self.sent if not f.done()]

    def answer_oldest(self) -> None:
        key, future = self.waiting()[0]
        seq = len(self.sent) - len(self.waiting()) + 1
        future.set_result(AppendAnswer(request_id=key, ok=True, seqs=[seq], events=[]))


class Limiter:
    def __init__(self) -> None:
        self.penalized: list[str] = []

    async def take(self, credential_id: str, ahead: int = 0) -> float:
        return 0.0

    async def penalize(self, credential_id: str, seconds: float) -> None:
        self.penalized.append(credential_id)


class Socket:
    def __init__(self) -> None:
        self.incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.out: list[dict[str, Any]] = []
        self.close_code: int | None = None
        self.close_reason = ""
        # As the gateway's intake tells a session: the messages read and waiting for it.
        self.scope = {"extensions": {PARSED_WAITING: {"count": self.incoming.qsize}}}

    def client_sends(self, frame: dict[str, Any]) -> None:
        self.incoming.put_nowait({"type": "websocket.receive", "text": json.dumps(frame)})

    async def receive(self) -> dict[str, Any]:
        return await self.incoming.get()

    async def send_text(self, text: str) -> None:
        self.out.append(json.loads(text))

    async def close(self, code: int, reason: str = "") -> None:
        self.close_code, self.close_reason = code, reason


class Ctx:
    def __init__(self, settings: GatewaySettings) -> None:
        self.settings = settings
        self.appender = Appender()
        self.limiter = Limiter()
        self.sockets = Sockets()
        self.reader = None
        self.links = None


def session(**limits: Any) -> tuple[Session, Socket, Ctx]:
    settings = GatewaySettings(**limits)
    ctx = Ctx(settings)
    ws = Socket()
    principal = Principal(
        new_id("cred"), new_id("ws"), new_id("usr"), "person", "P", "member", None
    )
    s = Session(ws, ctx, principal)  # type: ignore[arg-type]
    s.hello = {"frame": "hello"}
    return s, ws, ctx


def post(n: int) -> dict[str, Any]:
    event = {
        "type": "message.post",
        "space_id": "spc_1",
        "text": f"m{n}",
        "idempotency_key": f"k{n}",
    }
    return {"frame": "event", "event": event}


async def settle() -> None:
    for _ in range(50):
        await asyncio.sleep(0)


async def test_a_sockets_writes_go_to_the_log_a_few_at_a_time_in_order_and_all_are_acked() -> None:
    s, ws, ctx = session(ws_max_inflight_writes=4, socket_write_rate=1e6, socket_write_burst=10**6)
    log = ctx.appender
    running = asyncio.create_task(s.run())
    for n in range(30):
        ws.client_sends(post(n))
    await settle()
    # All thirty read (the socket is read on), four of them sent to the log.
    assert ws.incoming.empty()
    while log.waiting():
        assert len(log.waiting()) <= 4
        log.answer_oldest()
        await settle()
    assert [k for k, _ in log.sent] == [f"k{n}" for n in range(30)]
    acks = [f for f in ws.out if f["frame"] == "ack"]
    assert [a["idempotency_key"] for a in acks] == [f"k{n}" for n in range(30)]
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)


async def test_past_its_queue_a_socket_is_not_read_until_the_log_answers() -> None:
    s, ws, ctx = session(
        ws_max_inflight_writes=2,
        ws_max_queued_writes=3,
        socket_write_rate=1e6,
        socket_write_burst=10**6,
    )
    log = ctx.appender
    running = asyncio.create_task(s.run())
    for n in range(10):
        ws.client_sends(post(n))
    await settle()
    # Two in flight, three queued, one read and waiting for room: four left unread.
    assert len(log.waiting()) == 2
    assert ws.incoming.qsize() == 4
    log.answer_oldest()
    await settle()
    assert ws.incoming.qsize() == 3
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)


async def test_a_socket_that_writes_through_its_refusals_is_answered_then_closed_4429() -> None:
    s, ws, ctx = session(socket_write_rate=0.001, socket_write_burst=3, rate_limit_strikes=2)
    log = ctx.appender
    running = asyncio.create_task(s.run())
    for n in range(3):
        ws.client_sends(post(n))
    await settle()
    for n in range(3, 20):
        ws.client_sends(post(n))
    await settle()
    # Three taken and sent, then refusals until the strikes ran out: the socket is read
    # no further.
    assert not ws.incoming.empty()
    assert [k for k, _ in log.sent] == ["k0", "k1", "k2"]
    assert ws.close_code is None, "what it was let write is answered first"
    while log.waiting():
        log.answer_oldest()
        await settle()
    await asyncio.wait_for(running, 5)
    assert ws.close_code == CLOSE_RATE and ws.close_reason == "rate_limited"
    assert ctx.limiter.penalized == [s.principal.credential_id], "its credential waits too"
    kinds = [(f["frame"], f.get("code")) for f in ws.out]
    assert kinds.count(("ack", None)) == 3
    assert ws.out[-1]["code"] == "rate_limited"
    assert ws.out[-1]["message"].startswith("this socket went on writing")
    refused = [f for f in ws.out[:-1] if f.get("code") == "rate_limited"]
    assert refused and all(f["retry_after"] > 0 for f in refused)


async def test_past_its_log_burst_a_sockets_writes_go_to_the_log_at_its_rate() -> None:
    s, ws, ctx = session(socket_write_rate=50, socket_write_burst=100, socket_log_burst=2)
    log = ctx.appender
    running = asyncio.create_task(s.run())
    for n in range(5):
        ws.client_sends(post(n))
    await settle()
    # All five taken (within the burst), two sent at once, the rest queued at the gateway.
    assert [k for k, _ in log.sent] == ["k0", "k1"]
    assert len(s.queued_writes) == 3
    started = time.monotonic()
    async with asyncio.timeout(5):
        while len(log.sent) < 5:
            log.sending.clear()
            await log.sending.wait()
    # Three more, one token each at 50 a second.
    assert time.monotonic() - started >= 0.03
    assert [k for k, _ in log.sent] == [f"k{n}" for n in range(5)]
    assert not [f for f in ws.out if f["frame"] == "error"], "none refused"
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)


async def test_a_flooding_sockets_queued_writes_never_reach_the_log() -> None:
    """Closed for writing through its refusals, a socket has the writes it sent to the log
    answered, and those still queued at the gateway refused, never sent (docs/adr/0155)."""
    s, ws, ctx = session(
        socket_write_rate=0.001, socket_write_burst=6, socket_log_burst=2, rate_limit_strikes=2
    )
    log = ctx.appender
    running = asyncio.create_task(s.run())
    for n in range(6):
        ws.client_sends(post(n))
    await settle()
    assert [k for k, _ in log.sent] == ["k0", "k1"] and len(s.queued_writes) == 4
    for n in range(6, 20):
        ws.client_sends(post(n))
    await settle()
    assert not s.queued_writes, "the four queued were refused at once"
    while log.waiting():
        log.answer_oldest()
        await settle()
    await asyncio.wait_for(running, 5)
    assert [k for k, _ in log.sent] == ["k0", "k1"], "nothing more went to the log"
    assert ws.close_code == CLOSE_RATE
    answers = {f["idempotency_key"]: f for f in ws.out if "idempotency_key" in f}
    assert [answers[f"k{n}"]["frame"] for n in range(2)] == ["ack", "ack"]
    for n in range(2, 6):
        refused = answers[f"k{n}"]
        assert refused["code"] == "rate_limited" and "not logged" in refused["message"]
        assert refused["retry_after"] >= ctx.settings.rate_limit_penalty_seconds
