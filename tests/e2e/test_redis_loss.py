"""Redis lost: it costs fresh tickets and rate counters, never an event or readiness.

The suite's gateways share the machine's Redis; this test starts a redis-server of its
own, on its own port, and a gateway that uses it, so that it can kill and restart it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import redis.asyncio as aioredis

from chips_devstack.procs import Proc, answers, free_port, redis_proc, wait_until
from chips_devstack.stack import Stack
from tests.e2e.client import Api, Identity, Socket

GATEWAY = "gateway_redis"


class OwnRedis:
    def __init__(self, stack: Stack) -> None:
        self.port = free_port()
        self.logs = stack.root / "logs"
        self.proc: Proc | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = redis_proc(self.port, self.logs).start()
        wait_until(lambda: answers("127.0.0.1", self.port), 15, "Redis")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()


@pytest.fixture(scope="module")
def own_redis(stack: Stack) -> Iterator[tuple[OwnRedis, str]]:
    redis = OwnRedis(stack)
    redis.start()
    stack.extra_env[GATEWAY] = {"CHIPS_REDIS_URL": redis.url}
    stack.start(GATEWAY)
    stack.wait_ready(GATEWAY)
    yield redis, stack.url(GATEWAY)
    stack.stop(GATEWAY)
    if redis.proc is not None:
        redis.proc.stop()


async def write_many(url: str, who: Identity, space_id: str, texts: list[str]) -> list[int]:
    sock = await Socket.open(url, who)
    keys = [
        await sock.write({"type": "message.post", "space_id": space_id, "text": t}, f"r-{t}")
        for t in texts
    ]
    seqs = []
    for k in keys:
        answer = await sock.answer(k, timeout=30)
        assert answer["frame"] == "ack", answer
        seqs.append(answer["seq"])
    await sock.close()
    return seqs


async def test_redis_away_costs_tickets_only_and_everything_comes_back_by_itself(
    stack: Stack, api: Api, own_redis: tuple[OwnRedis, str]
) -> None:
    redis, url = own_redis
    gw = Api(url)
    try:
        owner = await api.create_workspace()
        _, space_id = await api.connect_harness(owner, "Scout")
        assert (await gw.http.post("/v1/socket-tickets", headers=gw.auth(owner))).status_code == 201

        redis.kill()
        # Still ready: readiness does not follow Redis.
        assert (await gw.http.get("/readyz")).status_code == 200
        r = await gw.http.post("/v1/socket-tickets", headers=gw.auth(owner))
        assert r.status_code == 503, r.text
        assert r.json()["code"] == "unavailable" and "try again" in r.json()["message"]
        # A ticket socket is told why before it is closed.
        sock = await Socket.open(url, query="?ticket=chips_tk_whatever", hello=False)
        error = await sock.wait_for(lambda f: f["frame"] == "error")
        assert error["code"] == "unavailable"
        await asyncio.wait_for(sock._reader, 10)  # type: ignore[arg-type]
        assert sock.conn.close_code == 1013
        # Writes go on (the per-credential limiter does without its counters).
        seqs = await write_many(url, owner, space_id, [f"away-{i}" for i in range(50)])
        assert seqs == sorted(seqs) and len(set(seqs)) == 50

        redis.start()

        async def ticket_again() -> bool:
            r = await gw.http.post("/v1/socket-tickets", headers=gw.auth(owner))
            return r.status_code == 201

        for _ in range(100):
            if await ticket_again():
                break
            await asyncio.sleep(0.1)
        ticket = (await gw.http.post("/v1/socket-tickets", headers=gw.auth(owner))).json()["ticket"]
        sock = await Socket.open(url, query=f"?ticket={ticket}")
        assert sock.hello_frame and sock.hello_frame["frame"] == "hello"
        await sock.close()
    finally:
        await gw.close()


async def test_flushall_and_a_restart_mid_traffic_lose_and_repeat_no_event(
    stack: Stack, api: Api, own_redis: tuple[OwnRedis, str]
) -> None:
    redis, url = own_redis
    owner = await api.create_workspace()
    _, space_id = await api.connect_harness(owner, "Scout")
    sock = await Socket.open(url, owner)
    keys: list[str] = []

    async def send(texts: list[str]) -> None:
        for t in texts:
            event = {"type": "message.post", "space_id": space_id, "text": t}
            keys.append(await sock.write(event, f"fl-{t}"))

    await send([f"before-{i}" for i in range(150)])
    client = aioredis.Redis.from_url(redis.url)
    await client.flushall()
    await client.aclose()
    await send([f"flushed-{i}" for i in range(150)])
    redis.kill()
    await send([f"killed-{i}" for i in range(100)])
    redis.start()
    await send([f"back-{i}" for i in range(100)])
    answers_ = [await sock.answer(k, timeout=30) for k in keys]
    await sock.close()
    assert all(a["frame"] == "ack" for a in answers_), [a for a in answers_ if a["frame"] != "ack"]
    seqs = [a["seq"] for a in answers_]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(keys)
    logged = await api.read(owner, since=seqs[0] - 1, space_id=space_id, limit=500)
    said = [e["text"] for e in logged if e["type"] == "message.post"]
    assert said == [k.removeprefix("fl-") for k in keys]
