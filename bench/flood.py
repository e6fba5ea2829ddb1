"""A noisy client against a calm one: the calm socket's ack latency, idle and under a flood.

Starts the whole system on free ports with the gateway's default limits. A canary socket
writes one message.post at a time (each waits for its ack) for CANARY events, first alone,
then while a flooding socket (another person) sends FLOOD events as fast as it can without
reading. Prints the canary's p50/p99 both times, the ratio, and what became of the flood
(acked, rate_limited, closed with 4429), and writes them to bench/results/flood.json.

    .venv/bin/python bench/flood.py [--canary 300] [--flood 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import websockets

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chips_devstack.stack import local_stack
from tests.e2e.client import Api

RESULTS = Path(__file__).parent / "results"


async def hello(url: str, token: str) -> Any:
    ws = await websockets.connect(
        url, additional_headers={"Authorization": f"Bearer {token}"}, max_size=2**24
    )
    await ws.send(json.dumps({"frame": "hello", "protocol": {"min": 1, "max": 1}}))
    await ws.recv()
    return ws


def post(space_id: str, text: str, key: str) -> str:
    event = {"type": "message.post", "space_id": space_id, "text": text, "idempotency_key": key}
    return json.dumps({"frame": "event", "event": event})


async def canary(url: str, token: str, space_id: str, count: int, tag: str) -> list[float]:
    ws = await hello(url, token)
    latencies = []
    for i in range(count):
        key = f"{tag}-{i}"
        started = time.perf_counter()
        await ws.send(post(space_id, f"canary {i}", key))
        while True:
            frame = json.loads(await ws.recv())
            if frame.get("idempotency_key") == key and frame["frame"] in ("ack", "error"):
                assert frame["frame"] == "ack", frame
                break
        latencies.append(time.perf_counter() - started)
        await asyncio.sleep(0.01)
    await ws.close()
    return sorted(latencies)


async def flood(url: str, token: str, space_id: str, count: int) -> dict[str, Any]:
    ws = await hello(url, token)
    sent = 0
    frames: list[dict[str, Any]] = []

    async def read() -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in ws:
                frames.append(json.loads(raw))

    reading = asyncio.create_task(read())
    with contextlib.suppress(websockets.ConnectionClosed):
        for i in range(count):
            await ws.send(post(space_id, f"flood {i}", f"flood-{i}"))
            sent += 1
    await asyncio.wait_for(reading, 60)
    return {
        "flood_sent": sent,
        "flood_acked": sum(f["frame"] == "ack" for f in frames),
        "flood_rate_limited": sum(f.get("code") == "rate_limited" for f in frames),
        "flood_close_code": ws.close_code,
    }


def pct(values: list[float], p: float) -> float:
    return round(values[max(int(len(values) * p) - 1, 0)] * 1000, 2)


async def run(base: str, count: int, flood_count: int) -> dict[str, Any]:
    api = Api(base)
    owner = await api.create_workspace(name="Flood")
    noisy = await api.add_person(owner, "Noisy")
    calm = await api.add_person(owner, "Calm")
    space_id = await api.open_space(owner, "Busy", [noisy.participant_id, calm.participant_id])
    await api.close()
    url = base.replace("http://", "ws://") + "/v1/ws"
    idle = await canary(url, calm.token, space_id, count, "idle")
    flooding = asyncio.create_task(flood(url, noisy.token, space_id, flood_count))
    busy = await canary(url, calm.token, space_id, count, "busy")
    outcome = await flooding
    return {
        "benchmark": "flood",
        "canary_events": count,
        "canary_idle_p50_ms": pct(idle, 0.5),
        "canary_idle_p99_ms": pct(idle, 0.99),
        "canary_flood_p50_ms": pct(busy, 0.5),
        "canary_flood_p99_ms": pct(busy, 0.99),
        "p99_ratio": round(pct(busy, 0.99) / max(pct(idle, 0.99), 0.01), 2),
        **outcome,
        "machine": f"{platform.machine()}, {platform.python_version()}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--canary", type=int, default=300)
    parser.add_argument("--flood", type=int, default=20_000)
    args = parser.parse_args()
    with local_stack(prefix="chips-bench-", gateways=1) as stack:
        figures = asyncio.run(run(stack.gateway_a, args.canary, args.flood))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "flood.json").write_text(json.dumps(figures, indent=2) + "\n")
    for name, value in figures.items():
        print(f"{name:>22}: {value}")


if __name__ == "__main__":
    main()
