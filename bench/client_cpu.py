"""What two client-side costs of every message come to, in a plain loop (ADR 0117, 0119).

  rows   a statement with ten array parameters (the eventlog's guarded write used them),
         against the same rows as one JSON text parameter: client CPU per statement,
         for 1 and for 8 rows
  acks   a JetStream publish whose store ack is read by nats-py's ``publish_async``,
         against ``chips_common.nats.stored.StoredPublisher``: client CPU per message,
         one at a time and 8 at once

Postgres is ``CHIPS_TEST_POSTGRES_URL``'s server (default 127.0.0.1:5432), NATS is
``CHIPS_NATS_URL`` (default nats://127.0.0.1:4222; the loop makes a memory stream of its
own and deletes it). Prints the figures and writes ``bench/results/<label>client-cpu.json``.

    .venv/bin/python bench/client_cpu.py [--rounds 2] [--label after-]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import nats
import orjson
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chips_common.nats.stored import StoredPublisher

RESULTS = Path(__file__).parent / "results"
POSTGRES = os.environ.get(
    "CHIPS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
).replace("postgresql+psycopg://", "postgresql://")
NATS_URL = os.environ.get("CHIPS_NATS_URL", "nats://127.0.0.1:4222")

EVENT = {
    "seq": 5,
    "id": "evt_a",
    "type": "message.new",
    "actor": {"id": "par_a"},
    "space_id": "spc_a",
}
ARRAYS = (
    "SELECT cardinality(%(seqs)s::bigint[]) + cardinality(%(ids)s::text[])"
    " + cardinality(%(types)s::text[]) + cardinality(%(actors)s::text[])"
    " + cardinality(%(spaces)s::text[]) + cardinality(%(bodies)s::jsonb[])"
    " + cardinality(%(traces)s::text[]) + cardinality(%(creds)s::text[])"
    " + cardinality(%(keys)s::text[]) + cardinality(%(key_seqs)s::jsonb[])"
)
ONE_JSON = "SELECT jsonb_array_length(%(rows)s::jsonb) + jsonb_array_length(%(keys)s::jsonb)"


def as_arrays(n: int) -> dict[str, Any]:
    body = orjson.dumps(EVENT).decode()
    return {
        "seqs": [5] * n,
        "ids": ["evt_a"] * n,
        "types": ["message.new"] * n,
        "actors": ["par_a"] * n,
        "spaces": ["spc_a"] * n,
        "bodies": [body] * n,
        "traces": [None] * n,
        "creds": ["cred_a"] * n,
        "keys": ["key_a"] * n,
        "key_seqs": ["[5]"] * n,
    }


def as_json(n: int) -> dict[str, Any]:
    row = {"seq": 5, "id": "evt_a", "type": "message.new", "actor_id": "par_a"}
    key = {"credential_id": "cred_a", "key": "key_a", "seqs": [5]}
    return {
        "rows": orjson.dumps(
            [{**row, "space_id": "spc_a", "body": EVENT, "tp": None}] * n
        ).decode(),
        "keys": orjson.dumps([key] * n).decode(),
    }


def rows(count: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    with psycopg.connect(POSTGRES, autocommit=True, prepare_threshold=0) as conn:
        for n in (1, 8):
            for name, sql, params in (("arrays", ARRAYS, as_arrays), ("json", ONE_JSON, as_json)):
                for _ in range(200):
                    conn.execute(sql, params(n)).fetchone()
                started = time.process_time()
                for _ in range(count):
                    conn.execute(sql, params(n)).fetchone()
                us = 1e6 * (time.process_time() - started) / count
                figures[f"{name}_{n}_rows_us_per_statement"] = round(us, 1)
    return figures


async def acks(count: int) -> dict[str, float]:
    nc = await nats.connect(NATS_URL)
    js = nc.jetstream()
    stream = f"BENCHACKS{os.getpid()}"
    await js.add_stream(name=stream, subjects=[f"benchacks{os.getpid()}.>"], storage="memory")
    subject = f"benchacks{os.getpid()}.a"
    ours = StoredPublisher(nc)

    async def library(n: int) -> None:
        await asyncio.gather(*[await js.publish_async(subject, b"x" * 300) for _ in range(n)])

    async def stored(n: int) -> None:
        await asyncio.gather(*[await ours.publish(subject, b"x" * 300) for _ in range(n)])

    ways: dict[str, Callable[[int], Awaitable[None]]] = {"publish_async": library, "stored": stored}
    figures: dict[str, float] = {}
    try:
        for batch in (1, 8):
            for name, way in ways.items():
                await way(200)
                started = time.process_time()
                for _ in range(count // batch):
                    await way(batch)
                us = 1e6 * (time.process_time() - started) / count
                figures[f"{name}_batch_{batch}_us_per_message"] = round(us, 1)
    finally:
        await js.delete_stream(stream)
        await nc.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    rounds = []
    for n in range(args.rounds):
        figures = {**rows(args.count), **asyncio.run(acks(args.count))}
        print(f"round {n + 1}: {figures}", flush=True)
        rounds.append(figures)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"{args.label}client-cpu.json"
    out.write_text(json.dumps({"rounds": rounds, "load_average": os.getloadavg()}, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
