"""The search service's fold of one batch, alone: round trips, CPU and time per batch.

The lag bench (`bench/search.py --lag-only`) runs the whole system on a machine others
share, so its lag and even its CPU per message move with the load and with how many
messages a batch happens to hold. This one folds batches of the same shape with two
handlers in one process, batch for batch in turn, against a database of its own:

- ``locked``: the fold of ADR 0067, the batch's workspaces in one transaction
  (``apply_batch``: `BEGIN`, lock and read, write, `COMMIT`);
- ``unlocked``: the service's handler (ADR 0110: posts alone in two autocommit
  statements, the rest locked).

Each batch is ``--posts`` posts, each in another of the mode's ``--workspaces``
workspaces, appended straight into the log before it is folded (not timed). Said per
batch: the round trips to Postgres (statements, and a `BEGIN` and a `COMMIT` for each
transaction), the process's CPU, and the time from the call to its return.

    .venv/bin/python bench/search_fold.py --batches 300 --posts 10 --out search-fold
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import secrets
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from chips_common.db.retry import once_more
from chips_common.db.scratch import scratch_database
from chips_search.consumer import apply_batch, build_handler

RESULTS = Path(__file__).parent / "results"
ADMIN = os.environ.get(
    "CHIPS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
TS = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Counter:
    """Round trips sent on an engine: each statement, and a BEGIN and a COMMIT for each
    transaction that is not autocommit."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.trips = 0
        event.listen(engine.sync_engine, "before_cursor_execute", self.statement)
        event.listen(engine.sync_engine, "begin", self.begin)

    def statement(self, *_: Any) -> None:
        self.trips += 1

    def begin(self, conn: Any) -> None:
        if not conn.connection.dbapi_connection.autocommit:
            self.trips += 2


async def append(engine: AsyncEngine, heads: dict[str, int], workspaces: list[str]) -> None:
    """One post in each of ``workspaces``, straight into the log."""
    rows = []
    for ws in workspaces:
        heads[ws] += 1
        seq = heads[ws]
        body = {
            "type": "message.post",
            "id": f"evt_{ws}_{seq}",
            "workspace_id": ws,
            "seq": seq,
            "ts": TS.isoformat().replace("+00:00", "Z"),
            "actor": {"kind": "person", "id": "usr_a"},
            "space_id": f"spc_{ws}",
            "message_id": f"msg_{ws}_{seq}",
            "text": f"load test line word{secrets.randbelow(30_000)} x{seq}",
        }
        rows.append({"ws": ws, "seq": seq, "id": body["id"], "body": json.dumps(body)})
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO events (workspace_id, seq, id, type, ts, actor_id, space_id, body)"
                " VALUES (:ws, :seq, :id, 'message.post', :ts, 'usr_a', 'spc_' || :ws,"
                " CAST(:body AS jsonb))"
            ),
            [{**row, "ts": TS} for row in rows],
        )
        await conn.execute(
            text("UPDATE workspaces SET head_seq = :seq WHERE id = :ws"),
            [{"ws": row["ws"], "seq": row["seq"]} for row in rows],
        )


async def measure(url: str, args: argparse.Namespace) -> dict[str, Any]:
    engine = create_async_engine(
        url, pool_pre_ping=False, connect_args={"options": "-c synchronous_commit=off"}
    )
    counter = Counter(engine)
    modes = ("locked", "unlocked")
    spaces = {m: [f"ws_{m[0]}{i:02d}" for i in range(args.workspaces)] for m in modes}
    heads = {ws: 0 for m in modes for ws in spaces[m]}
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO workspaces (id, name, head_seq, created_at) VALUES (:id, 'W', 0, :ts)"
            ),
            [{"id": ws, "ts": TS} for ws in heads],
        )

    async def locked(highest: dict[str, int]) -> None:
        async def fold(conn: AsyncConnection) -> dict[str, int]:
            async with conn.begin():
                return await apply_batch(conn, dict.fromkeys(highest))

        await once_more(engine, fold)

    handlers = {"locked": locked, "unlocked": build_handler(engine)}
    figures: dict[str, dict[str, list[float]]] = {
        m: {"trips": [], "cpu_ms": [], "wall_ms": []} for m in modes
    }
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    for n in range(args.batches + 5):
        for mode in modes if n % 2 == 0 else modes[::-1]:
            start = (n * args.posts) % args.workspaces
            batch = [spaces[mode][(start + i) % args.workspaces] for i in range(args.posts)]
            await append(engine, heads, batch)
            trips, cpu, wall = counter.trips, time.process_time(), time.perf_counter()
            await handlers[mode]({ws: heads[ws] for ws in batch})
            if n >= 5:  # the first few warm the pool and the caches
                figures[mode]["wall_ms"].append((time.perf_counter() - wall) * 1000)
                figures[mode]["cpu_ms"].append((time.process_time() - cpu) * 1000)
                figures[mode]["trips"].append(counter.trips - trips)
    load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    async with engine.connect() as conn:
        indexed = (await conn.execute(text("SELECT count(*) FROM search_docs"))).scalar()
    await engine.dispose()
    assert indexed == (args.batches + 5) * args.posts * 2, indexed
    out: dict[str, Any] = {"load_before": load_before, "load_after": load_after}
    for mode in modes:
        f = figures[mode]
        out[mode] = {
            "round_trips_per_batch": sum(f["trips"]) / len(f["trips"]),
            "cpu_ms_per_batch": round(sum(f["cpu_ms"]) / len(f["cpu_ms"]), 3),
            "cpu_ms_per_message": round(sum(f["cpu_ms"]) / len(f["cpu_ms"]) / args.posts, 3),
            "wall_ms_p50": round(quantile(f["wall_ms"], 0.5), 2),
            "wall_ms_p90": round(quantile(f["wall_ms"], 0.9), 2),
            "wall_ms_p99": round(quantile(f["wall_ms"], 0.99), 2),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=300, help="per mode")
    parser.add_argument("--posts", type=int, default=10, help="per batch")
    parser.add_argument("--workspaces", type=int, default=20, help="per mode")
    parser.add_argument("--out", default="search-fold")
    args = parser.parse_args()
    with scratch_database(ADMIN, "chips_fold") as url:
        figures = {
            "benchmark": "search_fold",
            "command": "python bench/search_fold.py " + " ".join(sys.argv[1:]),
            "machine": f"{platform.machine()}, {os.cpu_count()} cpus, {platform.python_version()}",
            "posts_per_batch": args.posts,
            "batches_per_mode": args.batches,
            **asyncio.run(measure(url, args)),
        }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
