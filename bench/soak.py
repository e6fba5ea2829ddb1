"""A long day without faults: steady team traffic, and how every process grows under it.

Starts the whole system on free ports (its own NATS, Redis and S3; a fresh database) and
makes the traffic a team makes, at a steady rate, for ``--minutes`` (default 60):

  posts      three writers (two people and a harness) post in turn over HTTP into
             three rooms, ``--rate`` posts a second in all
  sockets    a person and the harness follow the workspace on sockets and read it all
  files      every fiftieth post carries a file, fetched back once
  searches   every tenth post is followed by a search for a word of it

Every ``--every`` seconds (default 15) it samples each process (every service and the
infrastructure it started): resident memory, open file descriptors, sockets and threads;
the database's connections; and each consumer's lag (what JetStream holds for it that it
has not acknowledged). At the end it fits a line to each process's memory and prints the
slope in MB an hour, the file descriptors' and sockets' slopes, and the lag's p50/p99/max
over the run, and writes every sample and figure to ``bench/results/<label>soak.json``.

A slope is a trend, not a verdict: a run of a few minutes shows warm-up (caches, pools
and interned strings filling), an hour shows what is left.

    .venv/bin/python bench/soak.py [--minutes 60] [--rate 20] [--every 15] [--label x-]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import nats
import psutil
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chips_common.nats.streams import CONSUMERS, Names
from chips_devstack.stack import UNLIMITED, Stack, local_stack
from tests.e2e.client import Api, Identity, Socket, key

RESULTS = Path(__file__).parent / "results"
PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
WORDS = ("invoice", "harbour", "lantern", "meridian", "quarry", "saffron", "tundra", "velvet")


def slope_per_hour(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of (seconds, value) points, per hour."""
    if len(points) < 2:
        return 0.0
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    if var == 0:
        return 0.0
    return 3600 * sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def process_sample(pid: int) -> dict[str, float] | None:
    """One process's memory (MB), file descriptors, sockets and threads, with its
    children's (a service may run workers of its own)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
        rss = fds = sockets = threads = 0
        for p in procs:
            with p.oneshot():
                rss += p.memory_info().rss
                fds += p.num_fds()
                sockets += len(p.net_connections(kind="inet"))
                threads += p.num_threads()
    except psutil.Error:
        return None
    return {"rss_mb": rss / 2**20, "fds": fds, "sockets": sockets, "threads": threads}


class Traffic:
    """A team's steady traffic, counting what it did and what went wrong."""

    def __init__(self, api: Api, writers: list[Identity], rooms: list[str], rate: float) -> None:
        self.api, self.writers, self.rooms, self.rate = api, writers, rooms, rate
        self.counts = {"posts": 0, "files": 0, "searches": 0, "errors": 0}
        self.errors: list[str] = []
        self.running = True

    async def run(self) -> None:
        interval = 1 / self.rate
        n = 0
        next_at = time.perf_counter()
        while self.running:
            who = self.writers[n % len(self.writers)]
            room = self.rooms[n % len(self.rooms)]
            word = WORDS[n % len(WORDS)]
            try:
                await self.step(n, who, room, word)
            except Exception as exc:  # counted and reported: the day goes on
                self.counts["errors"] += 1
                if len(self.errors) < 20:
                    self.errors.append(f"{type(exc).__name__}: {exc}"[:300])
            n += 1
            next_at += interval
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))

    async def step(self, n: int, who: Identity, room: str, word: str) -> None:
        event: dict[str, Any] = {
            "type": "message.post",
            "space_id": room,
            "text": f"soak {n} {word}",
            "idempotency_key": key("soak"),
        }
        if n % 50 == 0:
            r = await self.api.http.post(
                "/v1/uploads",
                params={"name": f"s{n}.pdf"},
                content=PDF + f"% {n}\n".encode(),
                headers=self.api.auth(who),
            )
            r.raise_for_status()
            event["upload_ids"] = [r.json()["upload_id"]]
            self.counts["files"] += 1
        r = await self.api.post_event(who, event)
        r.raise_for_status()
        self.counts["posts"] += 1
        if n % 10 == 5:
            r = await self.api.http.get(
                "/v1/search", params={"q": word}, headers=self.api.auth(who)
            )
            r.raise_for_status()
            self.counts["searches"] += 1


async def follow(sock: Socket, workspace_id: str, seen: list[int]) -> None:
    """Read the workspace on a socket, dropping frames once counted (a day's worth of
    frames kept in memory would be the bench's own leak)."""
    await sock.subscribe(workspace_id, since=0)
    while not sock.closed:
        await sock._arrived.wait()
        sock._arrived.clear()
        frames, sock.frames = sock.frames, []
        seen[0] += sum(1 for f in frames if f.get("frame") == "event")


async def lags(js: Any, names: Names) -> dict[str, int]:
    """What JetStream holds for each consumer that it has not acknowledged."""
    out: dict[str, int] = {}
    for consumer in CONSUMERS:
        with contextlib.suppress(Exception):
            info = await js.consumer_info(names.events_stream, names.consumer(consumer))
            out[consumer] = int(info.num_pending + info.num_ack_pending)
    return out


def database_connections(stack: Stack) -> int:
    url = stack.env["CHIPS_DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://")
    database = url.rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database,)
        ).fetchone()
    return int(row[0]) if row else 0


async def soak(args: argparse.Namespace) -> dict[str, Any]:
    with local_stack(prefix="chips-soak-", env=UNLIMITED) as stack:
        api = Api(stack.gateway_a)
        owner = await api.create_workspace("Soak", "Arjun Rao")
        maya = await api.add_person(owner, "Maya Chen")
        scout, _ = await api.connect_harness(owner, "Scout")
        members = [maya.participant_id, scout.participant_id]
        rooms = [await api.open_space(owner, f"Room {i}", members) for i in range(3)]
        socks = [await Socket.open(stack.gateway_b, who) for who in (maya, scout)]
        seen = [[0] for _ in socks]
        followers = [
            asyncio.create_task(follow(s, owner.workspace_id, c))
            for s, c in zip(socks, seen, strict=True)
        ]
        traffic = Traffic(api, [owner, maya, scout], rooms, args.rate)
        running = asyncio.create_task(traffic.run())

        nc = await nats.connect(stack.env["CHIPS_NATS_URL"])
        js = nc.jetstream()
        names = Names("CHIPS", "chips")
        samples: list[dict[str, Any]] = []
        started = time.perf_counter()
        deadline = started + args.minutes * 60
        try:
            while time.perf_counter() < deadline:
                await asyncio.sleep(min(args.every, max(0.0, deadline - time.perf_counter())))
                t = round(time.perf_counter() - started, 1)
                procs = {
                    name: s
                    for name, proc in stack.procs.items()
                    if (s := process_sample(proc.pid)) is not None
                }
                sample = {
                    "t": t,
                    "procs": procs,
                    "lag": await lags(js, names),
                    "db_connections": database_connections(stack),
                    "counts": dict(traffic.counts),
                    "seen": [c[0] for c in seen],
                    "load": os.getloadavg()[0],
                }
                samples.append(sample)
                lag = max(sample["lag"].values(), default=0)
                print(
                    f"{t:7.0f} s  posts {traffic.counts['posts']}, errors"
                    f" {traffic.counts['errors']}, max lag {lag},"
                    f" db conns {sample['db_connections']}, load {sample['load']:.1f}",
                    flush=True,
                )
        finally:
            traffic.running = False
            await running
            for s in socks:
                await s.close()
            for f in followers:
                f.cancel()
            await nc.close()
            await api.close()

    # The first samples are warm-up: slopes are fitted from the second fifth of the run on.
    steady = samples[len(samples) // 5 :] if len(samples) >= 10 else samples
    figures: dict[str, Any] = {}
    for name in sorted({n for s in samples for n in s["procs"]}):
        points = {
            field: [(s["t"], s["procs"][name][field]) for s in steady if name in s["procs"]]
            for field in ("rss_mb", "fds", "sockets", "threads")
        }
        first = next(s["procs"][name] for s in samples if name in s["procs"])
        last = next(s["procs"][name] for s in reversed(samples) if name in s["procs"])
        figures[name] = {
            "rss_mb_first": round(first["rss_mb"], 1),
            "rss_mb_last": round(last["rss_mb"], 1),
            "rss_mb_per_hour": round(slope_per_hour(points["rss_mb"]), 1),
            "fds_per_hour": round(slope_per_hour(points["fds"]), 1),
            "sockets_per_hour": round(slope_per_hour(points["sockets"]), 1),
            "threads_last": last["threads"],
        }
    all_lags = [float(v) for s in samples for v in s["lag"].values()]
    return {
        "minutes": args.minutes,
        "rate": args.rate,
        "counts": traffic.counts,
        "errors": traffic.errors,
        "processes": figures,
        "lag": {
            "p50": percentile(all_lags, 0.5),
            "p99": percentile(all_lags, 0.99),
            "max": max(all_lags, default=0.0),
        },
        "db_connections_per_hour": round(
            slope_per_hour([(s["t"], s["db_connections"]) for s in steady]), 1
        ),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "samples": samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--rate", type=float, default=20, help="posts a second, in all")
    parser.add_argument("--every", type=float, default=15, help="seconds between samples")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    result = asyncio.run(soak(args))
    print(f"\n{result['counts']}; lag p50/p99/max {result['lag']}")
    print(f"{'process':<18} {'MB first':>9} {'MB last':>8} {'MB/h':>7} {'fds/h':>7} {'socks/h':>8}")
    for name, f in result["processes"].items():
        print(
            f"{name:<18} {f['rss_mb_first']:>9} {f['rss_mb_last']:>8}"
            f" {f['rss_mb_per_hour']:>7} {f['fds_per_hour']:>7} {f['sockets_per_hour']:>8}"
        )
    if result["errors"]:
        print("errors:", *result["errors"], sep="\n  ")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"{args.label}soak.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
