"""Append throughput and ack latency through a gateway, on the real stack.

Starts the whole system on free ports (as the e2e tests do), creates a workspace with a
direct space, then has SOCKETS person sockets each write EVENTS_PER_SOCKET message.post
events as fast as the server takes them, every write pipelined (not waiting for its ack).
Prints events/s and ack latency p50/p99, and writes them to bench/results/append.json.

    .venv/bin/python bench/append.py [--sockets 8] [--events 500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import websockets

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chips_devstack.stack import UNLIMITED, local_stack
from tests.e2e.client import Api

RESULTS = Path(__file__).parent / "results"


async def writer(url: str, token: str, space_id: str, count: int, tag: str) -> list[float]:
    latencies: list[float] = []
    sent: dict[str, float] = {}
    async with websockets.connect(
        url, additional_headers={"Authorization": f"Bearer {token}"}
    ) as ws:
        await ws.send(json.dumps({"frame": "hello", "protocol": {"min": 1, "max": 1}}))
        await ws.recv()

        async def read() -> None:
            while len(latencies) < count:
                frame = json.loads(await ws.recv())
                if frame["frame"] in ("ack", "error"):
                    latencies.append(time.perf_counter() - sent[frame["idempotency_key"]])

        reading = asyncio.create_task(read())
        for i in range(count):
            k = f"{tag}-{i}"
            sent[k] = time.perf_counter()
            await ws.send(
                json.dumps(
                    {
                        "frame": "event",
                        "event": {
                            "type": "message.post",
                            "space_id": space_id,
                            "text": f"bench {i}",
                            "idempotency_key": k,
                        },
                    }
                )
            )
        await reading
    return latencies


async def run(base: str, sockets: int, events: int) -> dict[str, object]:
    api = Api(base)
    owner = await api.create_workspace(name="Bench")
    _, space_id = await api.connect_harness(owner, "Bench harness")
    await api.close()
    url = base.replace("http://", "ws://") + "/v1/ws"
    started = time.perf_counter()
    results = await asyncio.gather(
        *(writer(url, owner.token, space_id, events, f"s{n}") for n in range(sockets))
    )
    elapsed = time.perf_counter() - started
    latencies = sorted(x for r in results for x in r)
    total = len(latencies)
    return {
        "benchmark": "append",
        "sockets": sockets,
        "events": total,
        "seconds": round(elapsed, 3),
        "events_per_second": round(total / elapsed, 1),
        "ack_p50_ms": round(statistics.median(latencies) * 1000, 2),
        "ack_p99_ms": round(latencies[int(total * 0.99) - 1] * 1000, 2),
        "machine": f"{platform.machine()}, {platform.python_version()}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sockets", type=int, default=8)
    parser.add_argument("--events", type=int, default=500, help="events per socket")
    args = parser.parse_args()
    with local_stack(prefix="chips-bench-", gateways=1, env=UNLIMITED) as stack:
        figures = asyncio.run(run(stack.gateway_a, args.sockets, args.events))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "append.json").write_text(json.dumps(figures, indent=2) + "\n")
    for name, value in figures.items():
        print(f"{name:>18}: {value}")


if __name__ == "__main__":
    main()
