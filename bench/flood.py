"""A noisy client against calm ones: the calm sockets' ack latency, idle and under a flood.

Starts the whole system on free ports with the gateway's default limits (or those in
``CHIPS_BENCH_ENV``, ``NAME=value`` pairs comma separated, to compare settings). Three
canary sockets write one message.post at a time, in turn (each waits for its ack, so
together they are one careful client), CANARY events each (or for SECONDS):

  room       a person in the flooder's room, who is also sent every message the flood
             gets logged, ahead of its own acks
  aside      a person of the same workspace in another room (same log, same partition,
             none of the flood's messages)
  elsewhere  a person of another workspace, on another partition of the log

first with nothing else going on, then while a flooding socket (another person, in the
room) sends as fast as it can, reading what it is sent. A flood the gateway closes comes
back on a new socket after a second, as a hostile client would, until the canaries are
done; a socket sends FLOOD posts at most. Prints each canary's p50/p99 both times and the
ratio, what became of the flood (acked, rate_limited, how its sockets were closed, by
whom, with which code and reason), each hop's mean from the services' metrics and the load
average, and writes them to bench/results/flood.json.

    .venv/bin/python bench/flood.py [--canary 300] [--flood 20000] [--seconds 90]
        [--label before-]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import websockets

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chips_common.config import Settings
from chips_common.nats.streams import Names
from chips_devstack.stack import Stack, local_stack
from tests.e2e.client import Api

RESULTS = Path(__file__).parent / "results"
# Every time in the results is seconds since this, so slow writes and the flood's sockets
# can be read against each other.
T0 = time.perf_counter()


def now() -> float:
    return round(time.perf_counter() - T0, 2)


CANARIES = ("room", "aside", "elsewhere")


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


class Canary:
    """One person's socket, subscribed to its workspace and read all along.

    It is sent what is said in its rooms (the flood's messages too, for the canary in the
    flood's room) as a client is, and keeps its answers for the writer to wait on.
    """

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

    async def write(self, key: str) -> tuple[float, dict[str, Any]]:
        answered = self.answers[key] = asyncio.get_running_loop().create_future()
        started = time.perf_counter()
        await self.ws.send(post(self.space_id, f"canary {key}", key))
        answer = await answered
        del self.answers[key]
        return time.perf_counter() - started, answer

    async def close(self) -> None:
        await self.ws.close()
        await self.reading


async def canaries(
    url: str, who: dict[str, tuple[str, str, str]], count: int, tag: str, cap: float
) -> dict[str, dict[str, Any]]:
    """One write at a time over the three canaries in turn, each waiting for its answer.

    So the canaries add the load of one careful client, whatever their number. Stops
    after ``count`` writes each or ``cap`` seconds, whichever comes first.
    """
    sockets = {name: await Canary.open(url, one) for name, one in who.items()}
    results: dict[str, dict[str, Any]] = {
        name: {"latencies": [], "errors": collections.Counter(), "slow": []} for name in who
    }
    began = time.perf_counter()
    for i in range(count):
        for name, canary in sockets.items():
            at = now()
            took, answer = await canary.write(f"{tag}-{name}-{i}")
            if answer["frame"] == "ack":
                results[name]["latencies"].append(took)
                if took > 0.5:
                    results[name]["slow"].append([at, round(took, 2)])
            else:
                results[name]["errors"][answer["code"]] += 1
            await asyncio.sleep(0.01)
        if time.perf_counter() - began > cap:
            break
    for name, canary in sockets.items():
        await canary.close()
        results[name]["latencies"].sort()
        results[name]["errors"] = dict(results[name]["errors"])
        results[name]["other_frames"] = canary.other_frames
    return results


class Flood:
    """Sends posts as fast as the socket takes them; comes back when it is closed."""

    def __init__(self, url: str, token: str, space_id: str, per_socket: int) -> None:
        self.url, self.token, self.space_id = url, token, space_id
        self.per_socket = per_socket
        self.sent = 0
        self.frames: collections.Counter[str] = collections.Counter()
        self.sockets: list[dict[str, Any]] = []
        self.first_ack = asyncio.Event()
        self.stop = asyncio.Event()
        self.acked_while_measured = 0
        self.measuring = False

    async def run(self) -> None:
        while not self.stop.is_set():
            try:
                ws = await hello(self.url, self.token)
            except websockets.InvalidStatus as refused:
                at = now()
                self.sockets.append(
                    {"refused_upgrade": refused.response.status_code, "open": [at, at]}
                )
                await asyncio.sleep(1.0)
                continue
            opened = now()
            sent_before = self.sent
            reading = asyncio.create_task(self.read(ws))
            sending = asyncio.create_task(self.send(ws))
            stopping = asyncio.create_task(self.stop.wait())
            await asyncio.wait({sending, reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if sending.done() and not reading.done():
                # All sent, or the socket closed under the sender: read on until the server
                # closes it or the canaries are done.
                await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
            by_us = not reading.done()
            stopping.cancel()
            sending.cancel()
            if by_us:
                await ws.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(reading, 60)
            rcvd, sent = ws.protocol.close_rcvd, ws.protocol.close_sent
            self.sockets.append(
                {
                    "closed_by": "flooder" if by_us else "server",
                    "close_code": ws.close_code,
                    "close_reason": ws.close_reason,
                    "server_close_frame": [rcvd.code, rcvd.reason] if rcvd else None,
                    "client_close_frame": [sent.code, sent.reason] if sent else None,
                    "sent": self.sent - sent_before,
                    "open": [opened, now()],
                }
            )
            if not self.stop.is_set():
                await asyncio.sleep(1.0)  # a client that comes back, as the SDK would

    async def send(self, ws: Any) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            for _ in range(self.per_socket):
                await ws.send(post(self.space_id, f"flood {self.sent}", f"flood-{self.sent}"))
                self.sent += 1

    async def read(self, ws: Any) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in ws:
                frame = json.loads(raw)
                kind = frame["frame"]
                if kind == "error":
                    kind = f"error {frame['code']}"
                elif kind == "ack":
                    self.first_ack.set()
                    if self.measuring:
                        self.acked_while_measured += 1
                self.frames[kind] += 1


def pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    return round(values[max(int(len(values) * p) - 1, 0)] * 1000, 2)


# Where an append's time goes, from the services' own metrics: (sum, count) of each.
HOPS = {
    "gateway_a": {
        # publishing a request to the eventlog's answer, as the gateway sees it
        "append_round_trip": "chips_gateway_append_seconds",
    },
    "eventlog": {
        # one workspace's batch: lock, rules, insert, commit
        "batch": "chips_eventlog_append_seconds",
        "batch_requests": "chips_eventlog_batch_requests",
    },
}


def scrape(stack: Stack) -> dict[str, tuple[float, float]]:
    """The sum and count of each of HOPS's histograms, as of now."""
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
    """Each hop's mean over what happened between two scrapes (ms; requests per batch)."""
    means: dict[str, float | None] = {}
    for hop, (total, count) in after.items():
        n = count - before[hop][1]
        mean = (total - before[hop][0]) / n if n else None
        scale = 1 if hop == "batch_requests" else 1000
        means[hop] = round(mean * scale, 2) if mean is not None else None
    return means


SPIED = ("gateway_a", "eventlog")


def spy(stack: Stack, seconds: float) -> list[tuple[str, Path, subprocess.Popen[bytes]]]:
    """py-spy sampling the gateway and the eventlog for ``seconds`` from the flood's start."""
    found = shutil.which("py-spy")
    command = [found] if found else ["uvx", "py-spy"]
    spies = []
    for name in SPIED:
        out = stack.root / f"flood-{name}-{time.time():.0f}.txt"
        pid = str(stack.procs[name].pid)
        argv = [*command, "record", "-p", pid, "-d", str(int(seconds)), "-r", "200"]
        argv += ["-f", "raw", "-o", str(out), "--nonblocking"]
        spies.append(
            (
                name,
                out,
                subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
            )
        )
    return spies


def profiles(spies: list[tuple[str, Path, subprocess.Popen[bytes]]]) -> dict[str, Any]:
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
        found[name] = {
            "samples": total,
            "raw": str(out),
            "top_own": [[f, round(c / max(total, 1), 3)] for f, c in own.most_common(15)],
            "top_under": [[f, round(c / max(total, 1), 3)] for f, c in under.most_common(40)],
        }
    return found


def load() -> dict[str, Any]:
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    return {"loadavg": [round(x, 2) for x in os.getloadavg()], "uptime": uptime}


async def run(
    stack: Stack, count: int, flood_count: int, cap: float, rounds: int, profile: float = 0.0
) -> dict[str, Any]:
    base = stack.gateway_a
    api = Api(base)
    owner = await api.create_workspace(name="Flood")
    # A flooder of its own each round: a closed flood's credential is kept out for the
    # penalty (docs/adr/0065), and each round is to meet a fresh one.
    noisy = [await api.add_person(owner, f"Noisy {r}") for r in range(rounds)]
    calm = await api.add_person(owner, "Calm")
    aside = await api.add_person(owner, "Aside")
    busy = await api.open_space(
        owner, "Busy", [*(n.participant_id for n in noisy), calm.participant_id]
    )
    quiet = await api.open_space(owner, "Quiet", [aside.participant_id])
    names = Names.from_settings(Settings())
    # Another workspace on another partition of the log (one in eight shares the flood's).
    for _ in range(32):
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
    done = []
    for r in range(rounds):
        one = await one_round(
            stack, url, who, noisy[r].token, busy, count, flood_count, cap, r, profile
        )
        done.append(one)
        print(
            f"round {r}: "
            + ", ".join(
                f"{name} p99 {one[f'{name}_idle_p99_ms']} -> {one[f'{name}_flood_p99_ms']} ms "
                f"({one[f'{name}_p99_ratio']}x)"
                for name in CANARIES
            ),
            flush=True,
        )
    figures: dict[str, Any] = dict(done[0])
    figures["rounds"] = done
    figures["partitions"] = {
        "flood's workspace": names.partition_of(owner.workspace_id),
        "elsewhere": names.partition_of(other.workspace_id),
    }
    ratios = [one[f"{name}_p99_ratio"] for one in done for name in CANARIES]
    figures["p99_ratios"] = {name: [one[f"{name}_p99_ratio"] for one in done] for name in CANARIES}
    figures["worst_p99_ratio"] = max((x for x in ratios if x is not None), default=None)
    return figures


async def one_round(
    stack: Stack,
    url: str,
    who: dict[str, tuple[str, str, str]],
    noisy_token: str,
    busy: str,
    count: int,
    flood_count: int,
    cap: float,
    r: int,
    profile: float = 0.0,
) -> dict[str, Any]:
    """The canaries alone, then under a flood: one ratio per canary, from one stack."""
    load_idle = load()
    metrics = [scrape(stack)]
    idle = await canaries(url, who, count, f"idle{r}", cap)
    metrics.append(scrape(stack))
    flood = Flood(url, noisy_token, busy, flood_count)
    spies = spy(stack, profile) if profile else []
    flooding = asyncio.create_task(flood.run())
    await asyncio.wait_for(flood.first_ack.wait(), 60)
    load_flood = load()
    flood.measuring = True
    metrics.append(scrape(stack))
    started = time.perf_counter()
    under = await canaries(url, who, count, f"busy{r}", cap)
    measured = time.perf_counter() - started
    metrics.append(scrape(stack))
    flood.measuring = False
    load_after = load()
    flood.stop.set()
    await flooding
    figures: dict[str, Any] = {"benchmark": "flood", "round": r, "canary_events": count}
    if spies:
        figures["profile"] = profiles(spies)
    for name in CANARIES:
        a, b = idle[name], under[name]
        figures[f"{name}_idle_p50_ms"] = pct(a["latencies"], 0.5)
        figures[f"{name}_idle_p99_ms"] = pct(a["latencies"], 0.99)
        figures[f"{name}_flood_p50_ms"] = pct(b["latencies"], 0.5)
        figures[f"{name}_flood_p99_ms"] = pct(b["latencies"], 0.99)
        p99_idle, p99_flood = pct(a["latencies"], 0.99), pct(b["latencies"], 0.99)
        figures[f"{name}_p99_ratio"] = (
            round(p99_flood / max(p99_idle, 0.01), 2) if p99_idle and p99_flood else None
        )
        figures[f"{name}_acked"] = {"idle": len(a["latencies"]), "flood": len(b["latencies"])}
        figures[f"{name}_errors"] = {"idle": a["errors"], "flood": b["errors"]}
        figures[f"{name}_frames_besides_answers"] = b["other_frames"]
        figures[f"{name}_slow_under_flood"] = b["slow"][:20]
    first = flood.sockets[0] if flood.sockets else {}
    figures.update(
        {
            "hops_idle": hop_means(metrics[0], metrics[1]),
            "hops_flood": hop_means(metrics[2], metrics[3]),
            "flood_sent": flood.sent,
            "flood_frames": dict(flood.frames),
            "flood_acked_per_second_while_measured": round(
                flood.acked_while_measured / measured, 1
            ),
            "flood_sockets": len(flood.sockets),
            "flood_close_code": first.get("close_code"),
            "flood_close_reason": first.get("close_reason"),
            "flood_closed_by": first.get("closed_by"),
            "flood_socket_closes": collections.Counter(
                f"{s['closed_by']} {s['close_code']}"
                if "closed_by" in s
                else f"upgrade refused {s['refused_upgrade']}"
                for s in flood.sockets
            ),
            "flood_first_sockets": flood.sockets[:3],
            "flood_sockets_open": [s["open"] for s in flood.sockets],
            "measured_seconds": round(measured, 1),
            "load_idle": load_idle,
            "load_flood": load_flood,
            "load_after": load_after,
            "machine": f"{platform.machine()}, Python {platform.python_version()}, "
            f"{os.cpu_count()} cores",
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--canary", type=int, default=300)
    parser.add_argument("--flood", type=int, default=20_000, help="posts per flood socket")
    parser.add_argument("--seconds", type=float, default=90, help="cap of each canary phase")
    parser.add_argument("--rounds", type=int, default=1, help="idle then flood, this many times")
    parser.add_argument(
        "--profile", type=float, default=0.0, help="py-spy the gateway and eventlog this long"
    )
    parser.add_argument("--label", default="", help="prefix of the result file, e.g. before-")
    parser.add_argument("--code", default="", help="what code ran, e.g. 'main at c55d47c'")
    args = parser.parse_args()
    env_text = os.environ.get("CHIPS_BENCH_ENV")
    env = dict(kv.split("=", 1) for kv in env_text.split(",")) if env_text else {}
    with local_stack(prefix="chips-bench-", gateways=1, env=env or None) as stack:
        figures = asyncio.run(
            run(stack, args.canary, args.flood, args.seconds, args.rounds, args.profile)
        )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    figures = {**figures, "settings": env, "code": args.code or commit}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.label}flood.json").write_text(json.dumps(figures, indent=2) + "\n")
    for name, value in figures.items():
        if name != "rounds":
            print(f"{name:>40}: {value}")


if __name__ == "__main__":
    main()
