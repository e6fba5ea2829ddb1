"""A noisy client against calm ones: the calm sockets' ack p99 while a flood is open,
against their p99 in the rest of the same minute.

Starts the whole system on free ports with the gateway's default limits (or those in
``CHIPS_BENCH_ENV``, ``NAME=value`` pairs comma separated, to compare settings). Three
canary sockets write one message.post at a time, in turn (each waits for its ack, so
together they are one careful client), all through each round of SECONDS:

  room       a person in the flooders' room, who is also sent every message a flood
             gets logged, ahead of its own acks
  aside      a person of the same workspace in another room (same log, same partition,
             none of the flood's messages)
  elsewhere  a person of another workspace, on another partition of the log

Meanwhile a process of its own (so that its sends never take the canaries' CPU or event
loop) opens FLOODS flooding sockets a round, evenly spaced with idle time before the
first and after the last, each another person of the room with a credential of its own
(a closed flood's credential is kept out for 30 s, docs/adr/0065), each sending up to
FLOOD posts as fast as the socket takes them and reading what it is sent, until the
gateway closes it (or CAP seconds).

A canary write is "flood-open" when it overlaps a flood socket's life (its connect to its
close, plus TAIL seconds for what the flood left behind it); every other write of the
round is "idle". The two p99s come from the same minute on the same machine, interleaved,
so the machine's swings between minutes cancel. Prints per round and canary the idle
p99, the flood-open p99 and their ratio; at the end the rounds past 2x and the median
ratio; writes everything to bench/results/<label>flood.json.

    .venv/bin/python bench/flood.py [--rounds 4] [--seconds 60] [--floods 4]
        [--flood 20000] [--tail 1.0] [--profile] [--label before-]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import websockets

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RESULTS = Path(__file__).parent / "results"
CANARIES = ("room", "aside", "elsewhere")
# Both processes time with CLOCK_MONOTONIC, which is the machine's, not the process's.
clock = time.monotonic


async def hello(url: str, token: str) -> Any:
    ws = await websockets.connect(
        url,
        additional_headers={"Authorization": f"Bearer {token}"},
        max_size=2**24,
        ping_interval=None,  # the server's pings are what keep a socket; ours would not help
    )
    await ws.send(json.dumps({"frame": "hello", "protocol": {"min": 1, "max": 1}}))
    await ws.recv()
    return ws


def post(space_id: str, text: str, key: str) -> str:
    event = {"type": "message.post", "space_id": space_id, "text": text, "idempotency_key": key}
    return json.dumps({"frame": "event", "event": event})


# ---------------------------------------------------------------------------------------
# The flooder: its own process (``--flooder``), told what to do on its standard input.


def frame(text: str) -> bytes:
    """A client's text frame, masked with a zero key (masking is then the identity: the
    flooder spends no CPU on it, and the server unmasks as it always does)."""
    payload = text.encode()
    n = len(payload)
    if n < 126:
        head = bytes([0x81, 0x80 | n])
    elif n < 65536:
        head = bytes([0x81, 0x80 | 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([0x81, 0x80 | 127]) + n.to_bytes(8, "big")
    return head + b"\0\0\0\0" + payload


def flood_bytes(space_id: str, count: int, tag: str) -> bytes:
    return b"".join(
        frame(post(space_id, f"flood {tag} {i}", f"flood-{tag}-{i}")) for i in range(count)
    )


async def flood_one(url: str, token: str, flood: bytes, cap: float) -> Any:
    """One flooding socket: its posts, built before the round, handed to the kernel in one
    write, so the flooder's own CPU is not part of what is measured; then what it is sent
    is read until the server closes it or ``cap`` seconds pass."""
    host, port = url.removeprefix("ws://").split("/", 1)[0].split(":")
    frames: collections.Counter[str] = collections.Counter()
    opened = clock()
    reader, writer = await asyncio.open_connection(host, int(port))
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            f"GET /v1/ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            f"Sec-WebSocket-Version: 13\r\nAuthorization: Bearer {token}\r\n\r\n"
        ).encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if status != 101:
        writer.close()
        return {"refused_upgrade": status, "open": [opened, clock()]}
    writer.write(frame(json.dumps({"frame": "hello", "protocol": {"min": 1, "max": 1}})) + flood)
    close: list[Any] = []
    buffer = b""

    async def read() -> None:
        nonlocal buffer
        while not close:
            data = await reader.read(65536)
            if not data:
                close.append([None, "connection ended"])
                return
            buffer += data
            while len(buffer) >= 2:
                opcode, n, at = buffer[0] & 0x0F, buffer[1] & 0x7F, 2
                if n == 126:
                    n, at = int.from_bytes(buffer[2:4], "big"), 4
                elif n == 127:
                    n, at = int.from_bytes(buffer[2:10], "big"), 10
                if len(buffer) < at + n:
                    break
                payload, buffer = buffer[at : at + n], buffer[at + n :]
                if opcode == 0x8:
                    code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else None
                    close.append([code, payload[2:].decode(errors="replace")])
                    return
                if opcode == 0x1:
                    one = json.loads(payload)
                    kind = one["frame"]
                    frames[f"error {one['code']}" if kind == "error" else kind] += 1

    with contextlib.suppress(TimeoutError, ConnectionError, asyncio.IncompleteReadError):
        await asyncio.wait_for(read(), cap)
    by_us = not close
    with contextlib.suppress(Exception):
        writer.write(b"\x88\x82\0\0\0\0" + (1000).to_bytes(2, "big"))
        writer.close()
        await asyncio.wait_for(writer.wait_closed(), 5)
    return {
        "closed_by": "flooder" if by_us else "server",
        "server_close_frame": close[0] if close else None,
        "sent_bytes": len(flood),
        "frames": dict(frames),
        "open": [opened, clock()],
    }


async def flooder(plan: dict[str, Any]) -> list[Any]:
    """Each flood of the plan at its time, in seconds after the flooder says it is ready
    (every flood's bytes built by then), on the machine's monotonic clock."""
    built = [flood_bytes(plan["space_id"], plan["count"], one["tag"]) for one in plan["floods"]]
    start = clock()
    print(json.dumps({"start": start}), flush=True)
    done = []
    for one, flood in zip(plan["floods"], built, strict=True):
        if (wait := start + one["at"] - clock()) > 0:
            await asyncio.sleep(wait)
        done.append(await flood_one(plan["url"], one["token"], flood, plan["cap"]))
    return done


def flooder_main() -> None:
    plan = json.loads(sys.stdin.readline())
    print(json.dumps(asyncio.run(flooder(plan))), flush=True)


# ---------------------------------------------------------------------------------------
# The canaries, in the bench's own process.


class Canary:
    """One person's socket, subscribed to its workspace and read all along."""

    def __init__(self, ws: Any, space_id: str) -> None:
        self.ws, self.space_id = ws, space_id
        self.answers: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.other_frames = 0
        self.reading = asyncio.create_task(self.read())

    @classmethod
    async def open(cls, url: str, who: tuple[str, str, str]) -> Canary:
        token, workspace_id, space_id = who
        ws = await hello(url, token)
        await ws.send(json.dumps({"frame": "subscribe", "workspace_id": workspace_id}))
        return cls(ws, space_id)

    async def read(self) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in self.ws:
                frame = json.loads(raw)
                waiting = self.answers.get(frame.get("idempotency_key", ""))
                if frame["frame"] in ("ack", "error") and waiting is not None:
                    waiting.set_result(frame)
                else:
                    self.other_frames += 1
        for waiting in self.answers.values():  # the socket closed under a write
            if not waiting.done():
                waiting.set_result({"frame": "error", "code": f"closed {self.ws.close_code}"})

    async def write(self, key: str) -> tuple[float, float, dict[str, Any]]:
        answered = self.answers[key] = asyncio.get_running_loop().create_future()
        started = clock()
        await self.ws.send(post(self.space_id, f"canary {key}", key))
        answer = await answered
        del self.answers[key]
        return started, clock(), answer

    async def close(self) -> None:
        await self.ws.close()
        await self.reading


async def canaries(
    url: str, who: dict[str, tuple[str, str, str]], until: float, tag: str
) -> dict[str, Any]:
    """One write at a time over the three canaries in turn, each waiting for its answer,
    until ``until``: every write's start and end, and the errors."""
    sockets = {name: await Canary.open(url, one) for name, one in who.items()}
    writes: dict[str, list[tuple[float, float]]] = {name: [] for name in who}
    errors: dict[str, collections.Counter[str]] = {name: collections.Counter() for name in who}
    i = 0
    while clock() < until:
        for name, canary in sockets.items():
            started, ended, answer = await canary.write(f"{tag}-{name}-{i}")
            if answer["frame"] == "ack":
                writes[name].append((started, ended))
            else:
                errors[name][answer["code"]] += 1
            await asyncio.sleep(0.01)
        i += 1
    other = {}
    for name, canary in sockets.items():
        await canary.close()
        other[name] = canary.other_frames
    return {"writes": writes, "errors": {k: dict(v) for k, v in errors.items()}, "other": other}


def pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return round(values[max(int(len(values) * p) - 1, 0)] * 1000, 2)


def split(
    writes: list[tuple[float, float]], windows: list[tuple[float, float]]
) -> tuple[list[float], list[float]]:
    """Latencies of the writes that overlap a window, and of those that overlap none."""
    idle, flood = [], []
    for started, ended in writes:
        inside = any(started < b and ended > a for a, b in windows)
        (flood if inside else idle).append(ended - started)
    return idle, flood


def ratio(idle: float | None, flood: float | None) -> float | None:
    return round(flood / max(idle, 0.01), 2) if idle and flood else None


# ---------------------------------------------------------------------------------------
# The stack's side: metrics, py-spy, the load.

# Where an append's time goes, from the services' own metrics: (sum, count) of each.
HOPS = {
    "gateway_a": {"append_round_trip": "chips_gateway_append_seconds"},
    "eventlog": {
        "batch": "chips_eventlog_append_seconds",
        "batch_requests": "chips_eventlog_batch_requests",
    },
}


def scrape(stack: Any) -> dict[str, tuple[float, float]]:
    found: dict[str, tuple[float, float]] = {}
    for service, hops in HOPS.items():
        text = httpx.get(stack.url(service) + "/metrics", timeout=30).text
        values = {
            name: float(value)
            for line in text.splitlines()
            if line and not line.startswith("#")
            for name, value in [line.rsplit(" ", 1)]
        }
        for hop, metric in hops.items():
            found[hop] = (values.get(f"{metric}_sum", 0.0), values.get(f"{metric}_count", 0.0))
    return found


def hop_means(
    before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]]
) -> dict[str, float | None]:
    means: dict[str, float | None] = {}
    for hop, (total, count) in after.items():
        n = count - before[hop][1]
        mean = (total - before[hop][0]) / n if n else None
        scale = 1 if hop == "batch_requests" else 1000
        means[hop] = round(mean * scale, 2) if mean is not None else None
    return means


SPIED = ("gateway_a", "eventlog")


def py_spy() -> list[str]:
    beside = Path(sys.executable).parent / "py-spy"
    found = shutil.which("py-spy") or (str(beside) if beside.exists() else None)
    return [found] if found else ["uvx", "py-spy"]


def spy(stack: Any, seconds: float, label: str) -> list[tuple[str, Path, Any]]:
    """py-spy sampling the gateway and the eventlog for ``seconds``."""
    spies = []
    for name in SPIED:
        out = stack.root / f"{label}flood-{name}-{time.time():.0f}.txt"
        argv = [*py_spy(), "record", "-p", str(stack.procs[name].pid), "-d", str(int(seconds))]
        argv += ["-r", "200", "-f", "raw", "-o", str(out), "--nonblocking"]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        spies.append((name, out, proc))
    return spies


def profiles(spies: list[tuple[str, Path, Any]]) -> dict[str, Any]:
    """Each spied process's samples: the top functions by own time and by time under them."""
    found: dict[str, Any] = {}
    for name, out, proc in spies:
        proc.wait(120)
        own: collections.Counter[str] = collections.Counter()
        under: collections.Counter[str] = collections.Counter()
        total = 0
        if out.exists():
            for line in out.read_text().splitlines():
                stack_text, _, n = line.rpartition(" ")
                if not n.isdigit():
                    continue
                frames = [
                    f.split(" (")[0] + " " + f.rsplit("/", 1)[-1].rstrip(")")
                    for f in stack_text.split(";")
                ]
                total += int(n)
                own[frames[-1]] += int(n)
                for f in set(frames):
                    under[f] += int(n)
            shutil.copy(out, RESULTS / out.name)
        found[name] = {
            "samples": total,
            "raw": f"bench/results/{out.name}",
            "top_own": [[f, round(c / max(total, 1), 3)] for f, c in own.most_common(15)],
            "top_under": [[f, round(c / max(total, 1), 3)] for f, c in under.most_common(40)],
        }
    return found


def cpu(stack: Any) -> dict[str, float]:
    """Each of the stack's processes' CPU seconds so far (user and system)."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for name, proc in stack.procs.items():
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            found[name] = (int(fields[11]) + int(fields[12])) / tick
    return found


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ---------------------------------------------------------------------------------------


async def run(stack: Any, args: argparse.Namespace) -> dict[str, Any]:
    from chips_common.config import Settings
    from chips_common.nats.streams import Names
    from tests.e2e.client import Api

    base = stack.gateway_a
    api = Api(base)
    owner = await api.create_workspace(name="Flood")
    n = args.rounds * args.floods
    noisy = [await api.add_person(owner, f"Noisy {i}") for i in range(n)]
    calm = await api.add_person(owner, "Calm")
    aside = await api.add_person(owner, "Aside")
    busy = await api.open_space(
        owner, "Busy", [*(x.participant_id for x in noisy), calm.participant_id]
    )
    quiet = await api.open_space(owner, "Quiet", [aside.participant_id])
    names = Names.from_settings(Settings())
    for _ in range(32):  # another workspace on another partition of the log
        other = await api.create_workspace(name="Elsewhere")
        if names.partition_of(other.workspace_id) != names.partition_of(owner.workspace_id):
            break
    elsewhere = await api.open_space(other, "Elsewhere", [])
    await api.close()
    url = base.replace("http://", "ws://") + "/v1/ws"
    who = {
        "room": (calm.token, owner.workspace_id, busy),
        "aside": (aside.token, owner.workspace_id, quiet),
        "elsewhere": (other.token, other.workspace_id, elsewhere),
    }
    # Warm the path up (first connections, the read models' first reads): not measured.
    await canaries(url, who, clock() + 3.0, "warm")
    done = []
    for r in range(args.rounds):
        tokens = [x.token for x in noisy[r * args.floods : (r + 1) * args.floods]]
        one = await one_round(stack, url, who, tokens, busy, r, args)
        done.append(one)
        print(
            f"round {r} (load {one['load'][0]}): "
            + ", ".join(
                f"{name} {one['canaries'][name]['idle_p99_ms']} -> "
                f"{one['canaries'][name]['flood_p99_ms']} ms "
                f"({one['canaries'][name]['p99_ratio']}x)"
                for name in CANARIES
            ),
            flush=True,
        )
    ratios = [one["canaries"][name]["p99_ratio"] for one in done for name in CANARIES]
    known = [x for x in ratios if x is not None]
    return {
        "benchmark": "flood",
        "rounds": done,
        "p99_ratios": {
            name: [one["canaries"][name]["p99_ratio"] for one in done] for name in CANARIES
        },
        "past_2x": f"{sum(x > 2 for x in known)} of {len(ratios)}",
        "median_ratio": round(statistics.median(known), 2) if known else None,
        "worst_ratio": max(known, default=None),
        "partitions": {
            "flood's workspace": names.partition_of(owner.workspace_id),
            "elsewhere": names.partition_of(other.workspace_id),
        },
    }


async def one_round(
    stack: Any,
    url: str,
    who: dict[str, tuple[str, str, str]],
    tokens: list[str],
    busy: str,
    r: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """The canaries for a round's SECONDS, with FLOODS floods from the flooder's process
    spread over it: one idle and one flood-open p99 per canary."""
    gap = args.seconds / (args.floods + 1)
    plan = {
        "url": url,
        "space_id": busy,
        "count": args.flood,
        "cap": args.cap,
        "floods": [
            {"at": gap * (i + 1), "token": token, "tag": f"{r}.{i}"}
            for i, token in enumerate(tokens)
        ],
    }
    flooder = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--flooder",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert flooder.stdin is not None and flooder.stdout is not None
    flooder.stdin.write(json.dumps(plan).encode() + b"\n")
    flooder.stdin.close()
    start = json.loads(await flooder.stdout.readline())["start"]
    spies = spy(stack, args.seconds, args.label) if args.profile else []
    metrics = scrape(stack)
    cpu_at = cpu(stack)
    load_at = load()
    measured = await canaries(url, who, start + args.seconds, f"r{r}")
    output, _ = await flooder.communicate()
    load_after = load()
    metrics_after = scrape(stack)
    cpu_after = cpu(stack)
    floods = json.loads(output)
    windows = [(f["open"][0], f["open"][1] + args.tail) for f in floods]
    flood_seconds = sum(b - a for a, b in windows)
    figures: dict[str, Any] = {
        "round": r,
        "seconds": args.seconds,
        "flood_open_seconds": round(flood_seconds, 2),
        "canaries": {},
    }
    for name in CANARIES:
        idle, flood = split(measured["writes"][name], windows)
        idle_p99, flood_p99 = pct(idle, 0.99), pct(flood, 0.99)
        figures["canaries"][name] = {
            "idle_p50_ms": pct(idle, 0.5),
            "idle_p99_ms": idle_p99,
            "flood_p50_ms": pct(flood, 0.5),
            "flood_p99_ms": flood_p99,
            "p99_ratio": ratio(idle_p99, flood_p99),
            "writes": {"idle": len(idle), "flood": len(flood)},
            "errors": measured["errors"][name],
            "frames_besides_answers": measured["other"][name],
            "slowest": [
                [round(s - start, 2), round((e - s) * 1000, 1)]
                for s, e in sorted(measured["writes"][name], key=lambda w: w[0] - w[1])[:5]
            ],
        }
    figures["floods"] = [
        {
            **{k: v for k, v in f.items() if k != "open"},
            "open_s": [round(f["open"][0] - start, 2), round(f["open"][1] - start, 2)],
        }
        for f in floods
    ]
    figures["hops"] = hop_means(metrics, metrics_after)
    figures["cpu_seconds"] = {
        name: round(cpu_after[name] - cpu_at[name], 2) for name in cpu_after if name in cpu_at
    }
    figures["load"] = load_at
    figures["load_after"] = load_after
    if spies:
        figures["profile"] = profiles(spies)
    return figures


def main() -> None:
    if "--flooder" in sys.argv:
        flooder_main()
        return
    from chips_devstack.stack import local_stack

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60, help="length of a round")
    parser.add_argument("--floods", type=int, default=4, help="flooding sockets a round")
    parser.add_argument("--flood", type=int, default=20_000, help="posts per flood socket")
    parser.add_argument("--cap", type=float, default=10.0, help="longest a flood socket lives")
    parser.add_argument(
        "--tail", type=float, default=1.0, help="seconds after a flood's close still its own"
    )
    parser.add_argument("--profile", action="store_true", help="py-spy the gateway and eventlog")
    parser.add_argument("--label", default="", help="prefix of the result file, e.g. before-")
    parser.add_argument("--code", default="", help="what code ran, e.g. 'main at c55d47c'")
    args = parser.parse_args()
    env_text = os.environ.get("CHIPS_BENCH_ENV")
    env = dict(kv.split("=", 1) for kv in env_text.split(",")) if env_text else {}
    RESULTS.mkdir(exist_ok=True)
    with local_stack(prefix="chips-bench-", gateways=1, env=env or None) as stack:
        figures = asyncio.run(run(stack, args))
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    figures = {
        **figures,
        "settings": env,
        "code": args.code or commit,
        "command": " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores",
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (RESULTS / f"{args.label}flood.json").write_text(json.dumps(figures, indent=2) + "\n")
    for name in ("p99_ratios", "past_2x", "median_ratio", "worst_ratio", "code"):
        print(f"{name:>12}: {figures[name]}")


if __name__ == "__main__":
    main()
