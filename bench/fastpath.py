"""The append path's five figures (issue 10), measured closed loop on the real stack.

Starts the whole system on free ports (as the e2e tests do, on 127.0.0.1 only), creates a
workspace whose owner shares a direct space with one harness, and measures:

  a. seq      one ``POST /v1/events`` message.post at a time: p50/p99 latency and msg/s
  b. http8    8 HTTP posts in flight (8 closed-loop workers): msg/s, p50, p99
  c. pipe     16 sockets, each keeping 8 pipelined posts unacked: acked/s, p50, p99
  d. seen     a person's socket posts, the harness's socket sees message.new, one in
              flight: p50/p99 from the send to the harness receiving it
  e. loaded   the same as d while a background load of RATE msg/s goes into the room from
              another socket of the same person (open loop, at a steady rate)

Each figure is bounded in count and in time and stops by itself. Each prints its figures
and writes bench/results/<label><name>.json with the machine, the commit and the load
average before and after (the machine is shared: read the load with the figures).

seq and http8 post with bench/lean.py's client (``--client httpx`` for the client used
before 3 December 2026, which cost 2-3.5 ms of CPU per request on this machine); each
result says which, and what the client itself spent per message.

    .venv/bin/python bench/fastpath.py [--only seq,http8,pipe,seen,loaded]
        [--rate 200] [--label before-] [--scale 1.0] [--client lean|httpx]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import itertools
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import websockets

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from lean import LeanHttp
from stackstart import bench_stack, service_pids

from chips_devstack.stack import UNLIMITED
from tests.e2e.client import Api, Identity

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parents[1]
HELLO = json.dumps({"frame": "hello", "protocol": {"min": 1, "max": 1}})
_keys = itertools.count(1)


def key(tag: str) -> str:
    return f"{tag}-{next(_keys)}"


def post(space_id: str, text: str, k: str) -> dict[str, Any]:
    return {"type": "message.post", "space_id": space_id, "text": text, "idempotency_key": k}


def frame(space_id: str, text: str, k: str) -> str:
    return json.dumps({"frame": "event", "event": post(space_id, text, k)})


def pct(values: list[float], p: float) -> float | None:
    """The p-th percentile in milliseconds (nearest rank), None without values."""
    if not values:
        return None
    s = sorted(values)
    rank = max(0, min(len(s) - 1, round(p / 100 * len(s)) - 1))
    return round(s[rank] * 1000, 2)


def summary(latencies: list[float]) -> dict[str, Any]:
    return {
        "count": len(latencies),
        "p50_ms": round(statistics.median(latencies) * 1000, 2) if latencies else None,
        "p90_ms": pct(latencies, 90),
        "p99_ms": pct(latencies, 99),
        "max_ms": round(max(latencies) * 1000, 2) if latencies else None,
    }


def commit() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except OSError:
        return "unknown"


TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds a process has used so far (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def postgres_cpu() -> float:
    """CPU seconds of every postgres process on the machine (shared: read as a bound),
    with what its backends that ended spent (the postmaster's children's times)."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if "(postgres)" in text:
            fields = text.rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15]) / TICK
    return total


def machine() -> str:
    return f"{platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} cores"


class Ws:
    """One socket with the person's or harness's token, hello done."""

    def __init__(self, conn: Any, head_seq: int = 0) -> None:
        self.conn = conn
        # The log's head as the hello was answered: subscribing with it as since, what is
        # posted next is the socket's whatever the server's "now" (older trees, --versus).
        self.head_seq = head_seq

    @classmethod
    async def open(cls, url: str, who: Identity) -> Ws:
        conn = await websockets.connect(
            url,
            additional_headers={"Authorization": f"Bearer {who.token}"},
            max_size=2**24,
            ping_interval=None,  # an overloaded server must not end the run by a missed pong
        )
        await conn.send(HELLO)
        hello = orjson.loads(await conn.recv())
        return cls(conn, int(hello.get("head_seq") or 0))


class HttpxPost:
    """The same calls as LeanHttp, on httpx (what the benches used before bench/lean.py)."""

    def __init__(self, base: str) -> None:
        self.http = httpx.AsyncClient(base_url=base, timeout=30)

    async def post(
        self, path: str, body: Any, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        r = await self.http.post(path, json=body, headers=headers)
        return r.status_code, r.content

    async def close(self) -> None:
        await self.http.aclose()


async def open_client(base: str, client: str) -> LeanHttp | HttpxPost:
    return await LeanHttp.open(base) if client == "lean" else HttpxPost(base)


@contextlib.asynccontextmanager
async def http_client(base: str, client: str) -> AsyncIterator[LeanHttp | HttpxPost]:
    http = await open_client(base, client)
    try:
        yield http
    finally:
        await http.close()


# -- a. one HTTP post at a time ----------------------------------------------------------


async def seq(
    base: str, who: Identity, space: str, count: int, cap: float, client: str = "lean"
) -> dict[str, Any]:
    latencies: list[float] = []
    headers = {"Authorization": f"Bearer {who.token}"}
    async with http_client(base, client) as http:
        for i in range(20):  # warm the connection and the caches
            status, body = await http.post(
                "/v1/events", post(space, f"warm {i}", key("w")), headers
            )
            assert status == 200, body
        started = time.perf_counter()
        cpu_started = time.process_time()
        for i in range(count):
            t = time.perf_counter()
            status, body = await http.post("/v1/events", post(space, f"seq {i}", key("a")), headers)
            latencies.append(time.perf_counter() - t)
            assert status == 200, body
            if time.perf_counter() - started > cap:
                break
        elapsed = time.perf_counter() - started
        client_cpu = time.process_time() - cpu_started
    return {
        "client": client,
        "msg_per_second": round(len(latencies) / elapsed, 1),
        "warm": 20,  # posted before measuring
        **summary(latencies),
        "client_cpu_ms_per_message": round(client_cpu / max(1, len(latencies)) * 1000, 3),
    }


# -- b. 8 HTTP posts in flight -----------------------------------------------------------


async def http8(
    base: str,
    writers: list[Identity],
    space: str,
    count: int,
    cap: float,
    inflight: int = 8,
    client: str = "lean",
) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    conns = [await open_client(base, client) for _ in range(inflight)]
    try:
        await asyncio.gather(
            *(
                c.post(
                    "/v1/events",
                    post(space, f"warm {i}", key("w")),
                    {"Authorization": f"Bearer {writers[i % len(writers)].token}"},
                )
                for i, c in enumerate(conns)
            )
        )
        started = time.perf_counter()
        cpu_started = time.process_time()
        left = itertools.count()

        async def worker(who: Identity, http: Any) -> None:
            nonlocal errors
            mine = {"Authorization": f"Bearer {who.token}"}
            while next(left) < count and time.perf_counter() - started < cap:
                t = time.perf_counter()
                status, _ = await http.post("/v1/events", post(space, "http8", key("b")), mine)
                latencies.append(time.perf_counter() - t)
                if status != 200:
                    errors += 1

        await asyncio.gather(
            *(worker(writers[n % len(writers)], conns[n]) for n in range(inflight))
        )
        elapsed = time.perf_counter() - started
        client_cpu = time.process_time() - cpu_started
    finally:
        for c in conns:
            await c.close()
    return {
        "client": client,
        "in_flight": inflight,
        "msg_per_second": round(len(latencies) / elapsed, 1),
        "warm": inflight,
        "errors": errors,
        **summary(latencies),
        "client_cpu_ms_per_message": round(client_cpu / max(1, len(latencies)) * 1000, 3),
    }


# -- c. 16 sockets x 8 pipelined ---------------------------------------------------------


async def pipe(
    url: str,
    writers: list[Identity],
    space: str,
    per_socket: int,
    cap: float,
    sockets: int = 16,
    window: int = 8,
) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    socks = [await Ws.open(url, writers[n % len(writers)]) for n in range(sockets)]
    started = time.perf_counter()

    async def one(ws: Ws, n: int) -> None:
        nonlocal errors
        sent: dict[str, float] = {}
        issued = 0
        answered = 0

        async def send_one() -> None:
            nonlocal issued
            k = f"c{n}-{issued}-{next(_keys)}"
            issued += 1
            sent[k] = time.perf_counter()
            await ws.conn.send(frame(space, "pipe", k))

        for _ in range(window):
            await send_one()
        while answered < issued:
            raw = await ws.conn.recv()
            f = orjson.loads(raw)
            if f.get("frame") not in ("ack", "error"):
                continue
            t = sent.pop(f.get("idempotency_key", ""), None)
            if t is None:
                continue
            answered += 1
            latencies.append(time.perf_counter() - t)
            if f["frame"] == "error":
                errors += 1
            if issued < per_socket and time.perf_counter() - started < cap:
                await send_one()

    await asyncio.gather(*(one(ws, n) for n, ws in enumerate(socks)))
    elapsed = time.perf_counter() - started
    for ws in socks:
        await ws.conn.close()
    return {
        "sockets": sockets,
        "window": window,
        "acked_per_second": round(len(latencies) / elapsed, 1),
        "warm": 0,
        "errors": errors,
        **summary(latencies),
    }


# -- d/e. post -> harness sees message.new ------------------------------------------------


async def seen(
    url: str,
    owner: Identity,
    harness: Identity,
    space: str,
    count: int,
    cap: float,
    rate: int = 0,
) -> dict[str, Any]:
    person = await Ws.open(url, owner)
    bot = await Ws.open(url, harness)
    await bot.conn.send(
        json.dumps(
            {"frame": "subscribe", "workspace_id": owner.workspace_id, "since": bot.head_seq}
        )
    )
    waiting: dict[str, asyncio.Future[float]] = {}
    latencies: list[float] = []
    stop = asyncio.Event()
    background_sent = 0

    async def read_bot() -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in bot.conn:
                f = orjson.loads(raw)
                events = f.get("events") or ([f["event"]] if "event" in f else [])
                for event in events:
                    if event.get("type") == "message.new":
                        fut = waiting.pop(event.get("text", ""), None)
                        if fut is not None and not fut.done():
                            fut.set_result(time.perf_counter())

    async def drain(ws: Ws) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for _ in ws.conn:
                pass

    async def background() -> None:
        nonlocal background_sent
        loud = await Ws.open(url, owner)
        draining = asyncio.create_task(drain(loud))
        t0 = time.perf_counter()
        i = 0
        while not stop.is_set():
            delay = t0 + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            await loud.conn.send(frame(space, f"noise {i}", key("n")))
            i += 1
        background_sent = i
        await loud.conn.close()
        draining.cancel()

    readers = [asyncio.create_task(read_bot()), asyncio.create_task(drain(person))]
    # The harness sees a first message before measuring: subscribed and warm.
    for i in range(10):
        text = f"warm seen {i} {next(_keys)}"
        fut = asyncio.get_running_loop().create_future()
        waiting[text] = fut
        await person.conn.send(frame(space, text, key("w")))
        await asyncio.wait_for(fut, 30)
    noise = asyncio.create_task(background()) if rate else None
    if noise:
        await asyncio.sleep(1)  # the load is steady before the first measured post
    started = time.perf_counter()
    lost = 0
    for i in range(count):
        text = f"seen {i} {next(_keys)}"
        fut = asyncio.get_running_loop().create_future()
        waiting[text] = fut
        t = time.perf_counter()
        await person.conn.send(frame(space, text, key("d")))
        try:
            arrived = await asyncio.wait_for(fut, 10)
            latencies.append(arrived - t)
        except TimeoutError:
            lost += 1
        if time.perf_counter() - started > cap:
            break
    elapsed = time.perf_counter() - started
    stop.set()
    if noise:
        await noise
    for ws in (person, bot):
        await ws.conn.close()
    for task in readers:
        task.cancel()
    out: dict[str, Any] = {
        "lost": lost,
        "seconds": round(elapsed, 2),
        "warm": 10,
        **summary(latencies),
    }
    if rate:
        out["background_rate"] = rate
        out["background_sent_per_second"] = round(background_sent / (elapsed + 1), 1)
    return out


FIGURES = ("seq", "http8", "pipe", "seen", "loaded")


@dataclasses.dataclass(frozen=True)
class Bench:
    """What the figures post as and into: a workspace's owner, who shares a direct space
    with a harness, and sixteen writers in a room with the harness."""

    url: str  # the gateway's socket
    owner: Identity
    harness: Identity
    space: str
    writers: list[Identity]
    room: str


async def prepare(base: str) -> Bench:
    api = Api(base)
    owner = await api.create_workspace(name="Fastpath bench")
    harness, space = await api.connect_harness(owner, "Bench harness")
    # Sixteen people, each with a socket of their own in (c) and the HTTP workers of (b),
    # in a room with the harness: each writer is within its own credential's rate limit.
    writers = [await api.add_person(owner, f"Writer {i}") for i in range(16)]
    room = await api.open_space(
        owner, "Bench room", [w.participant_id for w in writers] + [harness.participant_id]
    )
    await api.close()
    url = base.replace("http://", "ws://") + "/v1/ws"
    return Bench(url, owner, harness, space, writers, room)


async def run(
    base: str,
    only: list[str],
    rate: int,
    scale: float,
    label: str,
    pids: dict[str, int],
    code: str = "",
    client: str = "lean",
) -> dict[str, dict[str, Any]]:
    b = await prepare(base)
    n = lambda x: max(1, int(x * scale))  # noqa: E731
    plans: dict[str, Callable[[], Awaitable[dict[str, Any]]]] = {
        "seq": lambda: seq(base, b.owner, b.space, n(1000), 60, client),
        "http8": lambda: http8(base, b.writers, b.room, n(3000), 60, client=client),
        "pipe": lambda: pipe(b.url, b.writers, b.room, n(400), 60),
        "seen": lambda: seen(b.url, b.owner, b.harness, b.space, n(500), 60),
        "loaded": lambda: seen(b.url, b.owner, b.harness, b.space, n(500), 30, rate=rate),
    }
    out: dict[str, dict[str, Any]] = {}
    for name in only:
        load_before = os.getloadavg()
        cpu_before = {n: cpu_seconds(p) for n, p in pids.items()}
        pg_before = postgres_cpu()
        figures = await plans[name]()
        cpu = {n: cpu_seconds(p) - cpu_before[n] for n, p in pids.items()}
        cpu["postgres (whole machine)"] = postgres_cpu() - pg_before
        load_after = os.getloadavg()
        appended = figures["count"] + round(
            figures.get("background_sent_per_second", 0) * figures.get("seconds", 0)
        )
        result = {
            "benchmark": f"fastpath.{name}",
            **figures,
            # CPU each process spent per message appended: comparable across runs on a
            # shared machine, where the latencies are not.
            "cpu_ms_per_message": {
                n: round(1000 * c / max(1, appended), 3) for n, c in sorted(cpu.items())
            },
            "machine": machine(),
            "commit": code or commit(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in load_after],
            "nice": os.nice(0),
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        out[name] = result
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"{label}{name}.json").write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result), flush=True)
    return out


def main() -> None:
    # Stopped (by timeout, say), still stop the stack's processes on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(FIGURES), help="comma-separated figures")
    parser.add_argument("--rate", type=int, default=200, help="background msg/s for 'loaded'")
    parser.add_argument("--label", default="", help="prefix of the result files, e.g. before-")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every count")
    parser.add_argument(
        "--code", default="", help="what code ran, when not this tree (e.g. 'main at e560caa')"
    )
    parser.add_argument(
        "--versus",
        default="",
        help="an exported tree of another version (git archive): measured first, on the same "
        "machine at the same moment, its results labelled versus-",
    )
    parser.add_argument("--versus-code", default="", help="what the other tree is")
    parser.add_argument(
        "--client",
        choices=["lean", "httpx"],
        default="lean",
        help="the HTTP client of seq and http8: bench/lean.py (default), or httpx as before",
    )
    args = parser.parse_args()
    only = [x for x in args.only.split(",") if x]
    for name in only:
        if name not in FIGURES:
            parser.error(f"unknown figure {name}; one of {', '.join(FIGURES)}")
    env = os.environ.get("CHIPS_BENCH_ENV")
    extra = dict(kv.split("=", 1) for kv in env.split(",")) if env else {}
    # The figures measure the path, not the limiter: their targets (5,000/s over 16
    # sockets, 1,500/s over 8 people) are far past what one client may write at the
    # gateway's default limits (docs/adr/0065), so the stack takes none unless
    # CHIPS_BENCH_ENV sets them.
    extra = {**UNLIMITED, **extra}
    # (label, code, tree): the other version (bench/stackstart.py) first, then this tree.
    runs: list[tuple[str, str, str]] = []
    if args.versus:
        versus_code = args.versus_code or str(Path(args.versus))
        runs.append((f"{args.label}versus-", versus_code, args.versus))
    runs.append((args.label, args.code, ""))
    for label, code, tree in runs:
        with bench_stack(extra, tree) as stack:
            print(f"stack up ({code or 'this tree'}); logs and traces in {stack.root}", flush=True)
            pids = service_pids(stack)
            asyncio.run(
                run(stack.gateway_a, only, args.rate, args.scale, label, pids, code, args.client)
            )


if __name__ == "__main__":
    main()
