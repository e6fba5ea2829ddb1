"""Fan-out and memory of one gateway: events delivered a second, and the cost of an idle socket.

Starts the whole system on free ports with one gateway (write limits off, so the writer is
paced by this script and not by the limiter), then:

  idle    opens IDLE sockets (hello, then subscribe to the workspace, as an app does and
          then says nothing) and reads the gateway's resident memory before and after:
          the difference over the sockets is the memory of one idle socket.
  fanout  opens SOCKETS sockets of a person in one room, then a writer posts into the
          room at each of RATES posts a second for SECONDS: the events delivered a
          second is every socket's event frames over the time from the first post to the
          last frame seen. A socket is counted delivered only for what it read.

The client sockets are raw: the handshake is written by hand and frames are counted from
their headers, not decoded, so that several client processes (``--procs``) read a
thousand sockets' frames for less CPU than the gateway spends sending them (on a 2-core
machine the clients share the cores with the gateway, so the figure is a floor). They
offer permessage-deflate as a browser does unless ``--no-deflate``; the gateway decides.
The open-file limit is raised to its hard limit here, before the stack starts, so the
gateway (a child) inherits it. Prints the figures and writes bench/results/fanout.json.

With ``--profile RATE``, py-spy samples the gateway through the stage at that rate, and the
top of its profile (bench/profile.py's lists) is written to
bench/results/<label>fanout-profile-gateway.txt (``uvx py-spy`` when it is not on PATH).

    .venv/bin/python bench/fanout.py [--idle 10000] [--sockets 1000] [--rates 25,50,100]
        [--seconds 10] [--procs 2] [--no-deflate] [--label before-] [--profile 50]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import gc
import json
import multiprocessing
import os
import platform
import resource
import struct
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import websockets

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.profile import py_spy, top
from chips_devstack.stack import UNLIMITED, Stack, local_stack
from tests.e2e.client import Api

RESULTS = Path(__file__).parent / "results"
DEFLATE = "permessage-deflate; client_max_window_bits"


def raise_open_files() -> int:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def masked(text: str) -> bytes:
    """A client's text frame: masked, with the all-zero key (the payload as it is)."""
    payload = text.encode()
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x81, 0x80 | n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x81, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
    return head + b"\0\0\0\0" + payload


def pong(payload: bytes) -> bytes:
    return struct.pack("!BB", 0x8A, 0x80 | len(payload)) + b"\0\0\0\0" + payload


class Counting(asyncio.Protocol):
    """One raw client socket: counts the text frames it is sent, answers pings."""

    def __init__(self, opened: asyncio.Future[None]) -> None:
        self.opened = opened
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.upgraded = False
        self.frames = 0
        self.last = 0.0
        self.closed = False
        self.waiter: tuple[int, asyncio.Future[None]] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.opened.done():
            self.opened.set_exception(ConnectionError("closed before the upgrade"))
        if self.waiter is not None and not self.waiter[1].done():
            self.waiter[1].set_exception(ConnectionError("closed"))

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.upgraded:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            status = bytes(self.buffer[:end]).split(b"\r\n", 1)[0]
            del self.buffer[: end + 4]
            if b" 101 " not in status:
                self.opened.set_exception(ConnectionError(status.decode(errors="replace")))
                return
            self.upgraded = True
            self.opened.set_result(None)
        buf, i, n, frames = self.buffer, 0, len(self.buffer), 0
        while n - i >= 2:
            opcode, length = buf[i] & 0x0F, buf[i + 1] & 0x7F
            head = 2
            if length == 126:
                if n - i < 4:
                    break
                length, head = struct.unpack_from("!H", buf, i + 2)[0], 4
            elif length == 127:
                if n - i < 10:
                    break
                length, head = struct.unpack_from("!Q", buf, i + 2)[0], 10
            if n - i < head + length:
                break
            if opcode == 0x1:
                frames += 1
            elif opcode == 0x9 and self.transport is not None:
                self.transport.write(pong(bytes(buf[i + head : i + head + length])))
            i += head + length
        del buf[:i]
        if frames:
            self.frames += frames
            self.last = time.time()
            if self.waiter is not None and self.frames >= self.waiter[0]:
                self.waiter[1].set_result(None)
                self.waiter = None

    async def until(self, frames: int) -> None:
        if self.frames >= frames:
            return
        done = asyncio.get_running_loop().create_future()
        self.waiter = (frames, done)
        await done

    def send(self, text: str) -> None:
        assert self.transport is not None
        self.transport.write(masked(text))


async def open_socket(url: str, token: str, deflate: bool) -> Counting:
    parts = urlsplit(url)
    loop = asyncio.get_running_loop()
    opened: asyncio.Future[None] = loop.create_future()
    _, proto = await loop.create_connection(lambda: Counting(opened), parts.hostname, parts.port)
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        f"GET {parts.path} HTTP/1.1",
        f"Host: {parts.hostname}:{parts.port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
        f"Authorization: Bearer {token}",
    ]
    if deflate:
        lines.append(f"Sec-WebSocket-Extensions: {DEFLATE}")
    assert proto.transport is not None
    proto.transport.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    await opened
    return proto


async def subscribed(url: str, token: str, workspace_id: str, deflate: bool) -> Counting:
    """A socket that said hello and subscribed; the subscription is known to be in place
    when a second subscribe is refused (frames are read in order)."""
    sock = await open_socket(url, token, deflate)
    sock.send(json.dumps({"frame": "hello", "protocol": {"min": 1, "max": 1}}))
    subscribe = json.dumps({"frame": "subscribe", "workspace_id": workspace_id})
    sock.send(subscribe)
    sock.send(subscribe)
    await asyncio.wait_for(sock.until(2), 120)
    return sock


async def opening(
    url: str,
    token: str,
    ws_id: str,
    deflate: bool,
    sockets: list[Counting],
    errors: list[str],
    gate: asyncio.Semaphore,
) -> None:
    async with gate:
        try:
            sockets.append(await subscribed(url, token, ws_id, deflate))
        except Exception as exc:
            errors.append(repr(exc)[:200])


async def client_main(pipe: Connection, url: str, token: str, ws_id: str, deflate: bool) -> None:
    """A client process: opens sockets when told, and says how many frames they read."""
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[Any] = asyncio.Queue()
    loop.add_reader(pipe.fileno(), lambda: inbox.put_nowait(pipe.recv()))
    sockets: list[Counting] = []
    marks: list[int] = []
    gate = asyncio.Semaphore(32)
    while True:
        order = await inbox.get()
        if order[0] == "open":
            errors: list[str] = []
            await asyncio.gather(
                *(
                    opening(url, token, ws_id, deflate, sockets, errors, gate)
                    for _ in range(order[1])
                )
            )
            pipe.send(("opened", len(sockets), errors[:5], len(errors)))
        elif order[0] == "mark":
            marks = [s.frames for s in sockets]
            pipe.send(("marked",))
        elif order[0] == "count":
            got = sum(s.frames - m for s, m in zip(sockets, marks, strict=True))
            last = max((s.last for s in sockets), default=0.0)
            pipe.send(("counted", got, last, sum(s.closed for s in sockets)))
        elif order[0] == "close":
            for s in sockets:
                if s.transport is not None:
                    s.transport.close()
            sockets.clear()
            pipe.send(("closed",))
        elif order[0] == "exit":
            return


def client_process(pipe: Connection, url: str, token: str, ws_id: str, deflate: bool) -> None:
    raise_open_files()
    asyncio.run(client_main(pipe, url, token, ws_id, deflate))


class Clients:
    """Client processes, each holding its share of the sockets."""

    def __init__(self, procs: int, url: str, token: str, ws_id: str, deflate: bool) -> None:
        ctx = multiprocessing.get_context("fork")
        self.pipes: list[Connection] = []
        self.procs = []
        for _ in range(procs):
            ours, theirs = ctx.Pipe()
            p = ctx.Process(
                target=client_process, args=(theirs, url, token, ws_id, deflate), daemon=True
            )
            p.start()
            self.pipes.append(ours)
            self.procs.append(p)

    def ask(self, *order: Any) -> list[Any]:
        for pipe in self.pipes:
            pipe.send(order)
        return [pipe.recv() for pipe in self.pipes]

    def open(self, total: int) -> dict[str, Any]:
        shares = [
            total // len(self.pipes) + (i < total % len(self.pipes)) for i in range(len(self.pipes))
        ]
        for pipe, share in zip(self.pipes, shares, strict=True):
            pipe.send(("open", share))
        answers = [pipe.recv() for pipe in self.pipes]
        return {
            "opened": sum(a[1] for a in answers),
            "errors": sum(a[3] for a in answers),
            "first_errors": [e for a in answers for e in a[2]][:5],
        }

    def count(self) -> tuple[int, float, int]:
        answers = self.ask("count")
        return sum(a[1] for a in answers), max(a[2] for a in answers), sum(a[3] for a in answers)

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.ask("close")
        for pipe in self.pipes:
            with contextlib.suppress(Exception):
                pipe.send(("exit",))
        for p in self.procs:
            p.join(10)
            if p.is_alive():
                p.kill()


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def settled_rss(pid: int, seconds: float = 30.0) -> int:
    """The gateway's RSS once it stops moving (two readings a second apart within 1%)."""
    last, deadline = rss_kb(pid), time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = rss_kb(pid)
        if abs(now - last) <= last * 0.01:
            return now
        last = now
    return last


def post(space_id: str, text: str, key: str) -> str:
    event = {"type": "message.post", "space_id": space_id, "text": text, "idempotency_key": key}
    return json.dumps({"frame": "event", "event": event})


async def write_paced(
    url: str, token: str, space: str, rate: float, seconds: float
) -> dict[str, Any]:
    """Posts at ``rate`` a second for ``seconds``, not waiting on acks; counts the acks."""
    async with websockets.connect(
        url,
        additional_headers={"Authorization": f"Bearer {token}"},
        max_size=2**24,
        ping_interval=None,  # the server's pings keep the socket; ours would measure nothing
    ) as ws:
        await ws.send(json.dumps({"frame": "hello", "protocol": {"min": 1, "max": 1}}))
        await ws.recv()
        total = int(rate * seconds)
        acks: dict[str, int] = {}
        answered = [0.0]

        async def read() -> None:
            with contextlib.suppress(websockets.ConnectionClosed):
                await read_all()

        async def read_all() -> None:
            async for raw in ws:
                frame = json.loads(raw)
                answered[0] = time.time()
                kind = frame["frame"] if frame["frame"] != "error" else f"error {frame['code']}"
                acks[kind] = acks.get(kind, 0) + 1
                if sum(acks.values()) >= total:
                    return

        reading = asyncio.create_task(read())
        started = time.time()
        tag = os.urandom(3).hex()
        for i in range(total):
            delay = started + i / rate - time.time()
            if delay > 0:
                await asyncio.sleep(delay)
            await ws.send(post(space, f"fan-out {i}", f"fan-{tag}-{i}"))
        sent_by = time.time()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(reading, 120)
        return {
            "posts": total,
            "started": started,
            "sent_by": sent_by,
            "answered_by": answered[0],
            "answers": acks,
        }


def gateway_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def setup(stack: Stack) -> dict[str, Any]:
    api = Api(stack.gateway_a)
    owner = await api.create_workspace(name="Fan-out")
    reader = await api.add_person(owner, "Reader")
    idle = await api.add_person(owner, "Idle")
    room = await api.open_space(owner, "Everyone", [reader.participant_id])
    other = await api.create_workspace(name="Idle")
    await api.close()
    return {"owner": owner, "reader": reader, "idle": idle, "room": room, "other": other}


def measure(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    who = asyncio.run(setup(stack))
    url = stack.gateway_a.replace("http://", "ws://") + "/v1/ws"
    pid = stack.procs["gateway_a"].pid
    deflate = not args.no_deflate
    figures: dict[str, Any] = {"benchmark": "fanout", "deflate_offered": deflate}
    if args.idle:
        # Idle sockets of a workspace nobody writes in: nothing is sent them.
        other = who["other"]
        clients = Clients(args.procs, url, other.token, other.workspace_id, deflate)
        gc.collect()
        before = settled_rss(pid)
        started = time.time()
        opened = clients.open(args.idle)
        took = time.time() - started
        after = settled_rss(pid)
        figures["idle"] = {
            **opened,
            "open_seconds": round(took, 1),
            "gateway_rss_mb_before": round(before / 1024, 1),
            "gateway_rss_mb_after": round(after / 1024, 1),
            "kb_per_idle_socket": round((after - before) / max(opened["opened"], 1), 1),
        }
        print(f"idle: {figures['idle']}", flush=True)
        clients.stop()
    if args.sockets:
        owner, reader, room = who["owner"], who["reader"], who["room"]
        clients = Clients(args.procs, url, reader.token, owner.workspace_id, deflate)
        try:
            figures.update(fan_out(args, clients, url, pid, owner, room))
        finally:
            clients.stop()
    return figures


def fan_out(
    args: argparse.Namespace, clients: Clients, url: str, pid: int, owner: Any, room: str
) -> dict[str, Any]:
    """Posts into the room at each rate; what the room's sockets were delivered."""
    figures: dict[str, Any] = {}
    opened = clients.open(args.sockets)
    figures["fanout_sockets"] = opened
    # What the gateway spends with the room's sockets open and nothing posted (its
    # pings, its timers): part of each stage's CPU that no frame asked for.
    cpu0 = gateway_cpu(pid)
    time.sleep(5)
    quiet = figures["gateway_cpu_share_with_nothing_posted"] = round(
        (gateway_cpu(pid) - cpu0) / 5, 3
    )
    print(f"gateway CPU share, sockets open, nothing posted: {quiet}", flush=True)
    stages = []
    for rate in args.rates:
        clients.ask("mark")
        spy = sampling(pid, args.seconds + 1) if rate == args.profile else None
        cpu0 = gateway_cpu(pid)
        wrote = asyncio.run(write_paced(url, owner.token, room, rate, args.seconds))
        expected = wrote["posts"] * opened["opened"]
        deadline = time.time() + 60
        got, last, closed = clients.count()
        while got < expected and time.time() < deadline:
            time.sleep(0.5)
            newer = clients.count()
            if newer[0] == got and time.time() - newer[1] > 5:
                break  # nothing more coming
            got, last, closed = newer
        span = max(last - wrote["started"], 1e-9)
        stage = {
            "posts_per_second": rate,
            "posts": wrote["posts"],
            "writer_answers": wrote["answers"],
            "sockets": opened["opened"],
            "expected_frames": expected,
            "delivered_frames": got,
            "sockets_closed": closed,
            "seconds_first_post_to_last_frame": round(span, 2),
            "delivered_per_second": round(got / span),
            "offered_per_second": round(rate * opened["opened"]),
            "last_frame_after_last_post_s": round(last - wrote["sent_by"], 2),
            # When the log had answered every post: past the pacing, the log (not the
            # gateway's fan-out) set the pace.
            "last_answer_after_first_post_s": round(wrote["answered_by"] - wrote["started"], 2),
            "gateway_cpu_s": round(cpu := gateway_cpu(pid) - cpu0, 2),
            # What one core of the gateway would deliver at this CPU per frame.
            "gateway_cpu_us_per_frame": round(cpu / max(got, 1) * 1e6, 1),
            "frames_per_gateway_cpu_second": round(got / max(cpu, 1e-9)),
            "load": [round(x, 2) for x in os.getloadavg()],
        }
        stages.append(stage)
        print(f"fanout: {stage}", flush=True)
        if spy is not None:
            spy[1].wait(timeout=60)
            report = top(spy[0]) if spy[0].exists() else "py-spy wrote nothing"
            (RESULTS / f"{args.label}fanout-profile-gateway.txt").write_text(
                f"stage: {stage}\n\n{report}\n"
            )
            print(f"\n===== gateway, {rate:g} posts/s =====\n{report}", flush=True)
    figures["fanout"] = stages
    figures["best_delivered_per_second"] = max(s["delivered_per_second"] for s in stages)
    return figures


def sampling(pid: int, seconds: float) -> tuple[Path, subprocess.Popen[bytes]]:
    """py-spy sampling the gateway for ``seconds`` (its raw stacks in the temp directory)."""
    out = Path(tempfile.gettempdir()) / f"py-spy-fanout-{pid}.txt"
    spy = subprocess.Popen(
        [
            *py_spy(),
            *("record", "--pid", str(pid), "--duration", str(round(seconds))),
            *("--rate", "200", "--format", "raw", "--nonblocking", "-o", str(out)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return out, spy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=int, default=10_000, help="idle sockets (0: skip)")
    parser.add_argument("--sockets", type=int, default=1_000, help="sockets in the room")
    parser.add_argument(
        "--rates", default="25,50,100", help="posts a second into the room, comma separated"
    )
    parser.add_argument("--seconds", type=float, default=10, help="of each rate")
    parser.add_argument("--procs", type=int, default=2, help="client processes")
    parser.add_argument("--no-deflate", action="store_true", help="clients offer no compression")
    parser.add_argument("--label", default="", help="prefix of the result file, e.g. before-")
    parser.add_argument(
        "--profile", type=float, default=0, help="py-spy the gateway in this rate's stage"
    )
    parser.add_argument("--code", default="", help="what code ran, e.g. 'main at c55d47c'")
    parser.add_argument(
        "--env", default="", help="gateway settings, NAME=value pairs comma separated"
    )
    args = parser.parse_args()
    args.rates = [float(r) for r in args.rates.split(",") if r]
    limit = raise_open_files()
    # The gateway holds a file per socket, and its stack's connections besides (the
    # client processes each hold only their share).
    if limit < max(args.idle, args.sockets) + 500:
        sys.exit(
            f"the open-file limit is {limit} (hard): too few for the gateway to hold "
            f"{max(args.idle, args.sockets)} sockets; raise it (ulimit -Hn) and run again"
        )
    env = {**UNLIMITED, "CHIPS_LOG_LEVEL": "WARNING"}
    if args.env:
        env.update(dict(kv.split("=", 1) for kv in args.env.split(",")))
    with local_stack(prefix="chips-bench-", gateways=1, env=env) as stack:
        figures = measure(args, stack)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    figures.update(
        {
            "open_files_limit": limit,
            "settings": args.env,
            "code": args.code or commit,
            "machine": f"{platform.machine()}, Python {platform.python_version()}, "
            f"{os.cpu_count()} cores",
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.label}fanout.json").write_text(json.dumps(figures, indent=2) + "\n")
    for name, value in figures.items():
        print(f"{name:>28}: {value}")


if __name__ == "__main__":
    main()
