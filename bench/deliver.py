"""Post → message.new latency in a room with one person and five harnesses.

Starts the whole system on free ports (as the e2e tests do), opens a group room with one
person and five harnesses, each harness on its own socket, and has the person post at a
steady RATE messages per second for SECONDS seconds. Every message is @all, so each is a
turn for all five harnesses, and each delivery is shaped with context and room. Prints
the latency from the post being sent to each harness receiving its message.new (p50,
p99), and the same run again with context turned off in the harnesses' hello
(``context: {lines: 0}``): the difference is what shaping the context costs per delivery.
Figures go to bench/results/deliver.json.

    .venv/bin/python bench/deliver.py [--rate 200] [--seconds 10]
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
from pathlib import Path
from typing import Any

import orjson
import websockets

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chips_devstack.stack import UNLIMITED, local_stack
from tests.e2e.client import Api

RESULTS = Path(__file__).parent / "results"


async def listen(
    url: str,
    token: str,
    workspace_id: str,
    context: dict[str, int] | None,
    sent: dict[str, float],
    latencies: list[float],
    stop: asyncio.Event,
    ready: asyncio.Event,
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with websockets.connect(url, additional_headers=headers, max_size=2**24) as ws:
        hello: dict[str, Any] = {"frame": "hello", "protocol": {"min": 1, "max": 1}}
        if context is not None:
            hello["context"] = context
        await ws.send(json.dumps(hello))
        await ws.recv()
        await ws.send(json.dumps({"frame": "subscribe", "workspace_id": workspace_id}))
        ready.set()
        while not stop.is_set():
            try:
                raw = await asyncio.wait_for(ws.recv(), 1)
            except TimeoutError:
                continue
            frame = orjson.loads(raw)
            event = frame.get("event") or {}
            if event.get("type") == "message.new" and event.get("text") in sent:
                latencies.append(time.perf_counter() - sent[event["text"]])


async def one_run(
    base: str, rate: int, seconds: int, context: dict[str, int] | None
) -> dict[str, Any]:
    api = Api(base)
    owner = await api.create_workspace(name="Deliver bench")
    harnesses = [(await api.connect_harness(owner, f"Bot {i}"))[0] for i in range(5)]
    room = await api.open_space(owner, "Bench room", [h.participant_id for h in harnesses])
    await api.close()
    url = base.replace("http://", "ws://") + "/v1/ws"
    sent: dict[str, float] = {}
    latencies: list[float] = []
    stop = asyncio.Event()
    readies = [asyncio.Event() for _ in harnesses]
    listeners = [
        asyncio.create_task(
            listen(url, h.token, owner.workspace_id, context, sent, latencies, stop, r)
        )
        for h, r in zip(harnesses, readies, strict=True)
    ]
    await asyncio.gather(*(r.wait() for r in readies))
    await asyncio.sleep(0.5)
    total = rate * seconds
    async with websockets.connect(
        url, additional_headers={"Authorization": f"Bearer {owner.token}"}
    ) as ws:
        await ws.send(json.dumps({"frame": "hello", "protocol": {"min": 1, "max": 1}}))
        await ws.recv()

        async def drain() -> None:
            while not stop.is_set():
                try:
                    await asyncio.wait_for(ws.recv(), 1)
                except TimeoutError:
                    continue

        draining = asyncio.create_task(drain())
        started = time.perf_counter()
        for i in range(total):
            # A steady rate: each post goes at its own moment, late ones at once.
            delay = started + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            text = f"@all bench {i}"
            sent[text] = time.perf_counter()
            await ws.send(
                json.dumps(
                    {
                        "frame": "event",
                        "event": {
                            "type": "message.post",
                            "space_id": room,
                            "text": text,
                            "idempotency_key": f"bench-{i}",
                        },
                    }
                )
            )
        deadline = time.perf_counter() + 30
        wanted = total * len(harnesses)
        while len(latencies) < wanted and time.perf_counter() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.2)
        stop.set()
        await asyncio.gather(draining, *listeners, return_exceptions=True)
    latencies.sort()
    n = len(latencies)
    return {
        "deliveries": n,
        "expected": total * len(harnesses),
        "p50_ms": round(statistics.median(latencies) * 1000, 2) if n else None,
        "p99_ms": round(latencies[max(0, int(n * 0.99) - 1)] * 1000, 2) if n else None,
    }


async def run(base: str, rate: int, seconds: int) -> dict[str, Any]:
    shaped = await one_run(base, rate, seconds, None)
    plain = await one_run(base, rate, seconds, {"lines": 0})
    return {
        "benchmark": "deliver",
        "rate_per_second": rate,
        "seconds": seconds,
        "harnesses": 5,
        "with_context": shaped,
        "without_context": plain,
        "context_cost_p50_ms": (
            round(shaped["p50_ms"] - plain["p50_ms"], 2)
            if shaped["p50_ms"] is not None and plain["p50_ms"] is not None
            else None
        ),
        "machine": f"{platform.machine()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=200, help="messages per second")
    parser.add_argument("--seconds", type=int, default=10)
    args = parser.parse_args()
    with local_stack(prefix="chips-bench-", gateways=1, env=UNLIMITED) as stack:
        figures = asyncio.run(run(stack.gateway_a, args.rate, args.seconds))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "deliver.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
