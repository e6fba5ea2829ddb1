"""Upload throughput and latency, and the attachments service's memory during a big upload.

Starts the whole system on free ports (as the e2e tests do), with its own S3 endpoint.
Closed loop: CLIENTS clients each upload files one after another through the gateway, new
bytes every time (so each is stored), for 100 KB and for 5 MB files; prints uploads/s and
the latency p50/p99 of each size. Then one 200 MB upload, its body generated as it is
sent, while the resident memory (RSS) of the attachments service and of the gateway is
sampled every 50 ms: streaming means it stays flat. Writes bench/results/attachments.json.

    .venv/bin/python bench/attachments.py [--clients 4] [--small 200] [--large 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chips_devstack.stack import Stack, local_stack
from tests.e2e.client import Api

RESULTS = Path(__file__).parent / "results"
MB = 1_000_000


def load() -> str:
    """The machine's load average (1, 5, 15 minutes), as `uptime` says it."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def uploader(base: str, token: str, size: int, count: int, tag: str) -> list[float]:
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=base, timeout=120) as http:
        for i in range(count):
            body = f"{tag}-{i}-".encode().ljust(32, b"-") + os.urandom(size - 32)
            started = time.perf_counter()
            r = await http.post(
                "/v1/uploads",
                params={"name": f"{tag}-{i}.bin"},
                content=body,
                headers={"Authorization": f"Bearer {token}"},
            )
            latencies.append(time.perf_counter() - started)
            assert r.status_code == 201, r.text
    return latencies


async def closed_loop(
    base: str, token: str, size: int, clients: int, count: int
) -> dict[str, object]:
    started = time.perf_counter()
    results = await asyncio.gather(
        *(uploader(base, token, size, count, f"c{n}-{size}") for n in range(clients))
    )
    elapsed = time.perf_counter() - started
    latencies = sorted(x for r in results for x in r)
    total = len(latencies)
    return {
        "file_bytes": size,
        "clients": clients,
        "uploads": total,
        "seconds": round(elapsed, 3),
        "uploads_per_second": round(total / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 1),
        "p99_ms": round(latencies[max(int(total * 0.99) - 1, 0)] * 1000, 1),
    }


async def big_upload(stack: Stack, token: str, size: int) -> dict[str, object]:
    pids = {
        "attachments": stack.procs["attachments"].pid,
        "gateway": stack.procs["gateway_a"].pid,
    }
    samples: dict[str, list[float]] = {name: [] for name in pids}
    before = {name: round(rss_mb(pid), 1) for name, pid in pids.items()}
    done = asyncio.Event()

    async def sample() -> None:
        while not done.is_set():
            for name, pid in pids.items():
                samples[name].append(rss_mb(pid))
            await asyncio.sleep(0.05)

    async def body() -> AsyncIterator[bytes]:
        chunk = os.urandom(MB)
        for i in range(size // MB):
            yield i.to_bytes(8, "big") + chunk[8:]

    sampler = asyncio.create_task(sample())
    started = time.perf_counter()
    async with httpx.AsyncClient(base_url=stack.gateway_a, timeout=600) as http:
        r = await http.post(
            "/v1/uploads",
            params={"name": "big.bin"},
            content=body(),
            headers={"Authorization": f"Bearer {token}", "Content-Length": str(size)},
        )
    elapsed = time.perf_counter() - started
    done.set()
    await sampler
    assert r.status_code == 201, r.text
    return {
        "file_bytes": size,
        "seconds": round(elapsed, 2),
        "mb_per_second": round(size / MB / elapsed, 1),
        "rss_mb_before": before,
        "rss_mb_peak": {name: round(max(s), 1) for name, s in samples.items()},
        "rss_mb_growth": {name: round(max(s) - before[name], 1) for name, s in samples.items()},
        "samples": {name: len(s) for name, s in samples.items()},
    }


async def run(stack: Stack, clients: int, small: int, large: int) -> dict[str, object]:
    api = Api(stack.gateway_a)
    owner = await api.create_workspace(name="Bench")
    await api.close()
    base = stack.gateway_a
    # The machine is shared: each figure says the load it was measured under.
    small_run = {
        "load_before": load(),
        **await closed_loop(base, owner.token, 100_000, clients, small),
    }
    small_run["load_after"] = load()
    large_run = {
        "load_before": load(),
        **await closed_loop(base, owner.token, 5 * MB, clients, large),
    }
    large_run["load_after"] = load()
    streaming = {"load_before": load(), **await big_upload(stack, owner.token, 200 * MB)}
    streaming["load_after"] = load()
    return {
        "benchmark": "attachments",
        "small": small_run,
        "large": large_run,
        "streaming": streaming,
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, {platform.python_version()}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--small", type=int, default=100, help="100 KB uploads per client")
    parser.add_argument("--large", type=int, default=10, help="5 MB uploads per client")
    parser.add_argument("--out", default="attachments.json", help="file in bench/results/")
    args = parser.parse_args()
    with local_stack(prefix="chips-bench-", gateways=1) as stack:
        figures = asyncio.run(run(stack, args.clients, args.small, args.large))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / args.out).write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
