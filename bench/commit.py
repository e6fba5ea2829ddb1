"""The eventlog's own share of an append: the door and the commit, against Postgres alone.

fastpath.py measures the whole path on a machine shared with other stacks, where every hop
waits for a core; this one measures only what the door changed: ``Appender.append_group``
(lock the head, decide, write, commit) called in process on a fresh database, without
NATS, the gateway or the consumers that fold every event. Two figures, each in rounds:

  idle    one message.post per transaction, one after the other: p50/p90 ms per append
  loaded  64 message.posts per transaction (what a busy partition pulls at once):
          p50 ms per batch, and appends per second

``--versus TREE`` runs an exported tree of another version (git archive) the same way,
round for round alternating with this one, so both see the same machine. Postgres is
``CHIPS_TEST_POSTGRES_URL`` (default 127.0.0.1:5432); each run makes a database of its own
and drops it.

    .venv/bin/python bench/commit.py [--rounds 3] [--posts 200] [--batches 20]
        [--versus /tmp/main-tree] [--label after-]
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
ADMIN = os.environ.get(
    "CHIPS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


def _plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


async def measure(url: str, posts: int, batches: int) -> dict[str, Any]:
    """One round on a migrated database: the idle and the loaded figure."""
    from opentelemetry.trace import INVALID_SPAN
    from sqlalchemy.ext.asyncio import create_async_engine

    from chips_common.append import Actor, AppendRequest, IssuedCredential
    from chips_common.nats.streams import Names
    from chips_eventlog.consumer import Appender, Pending

    engine = create_async_engine(url)
    appender = Appender(engine, None, None, Names("CHIPS", "chips", 1))  # type: ignore[arg-type]
    args: list[Any] = []
    if "held" in inspect.signature(appender.append_group).parameters:  # a leased partition
        from chips_eventlog.leases import Leases

        leases = Leases(engine, 1, 60)
        await leases.open()
        args.append(await leases.take(0))
    keys = iter(range(10**9))
    ws = "ws_bench"

    def request(actor: Actor, *events: dict[str, Any], **more: Any) -> Pending:
        key = f"k{next(keys)}"
        req = AppendRequest(
            request_id=key,
            workspace_id=ws,
            credential_id=f"crd_{actor.id}",
            actor=actor,
            idempotency_key=key,
            events=list(events),
            **more,
        )
        return Pending(msg=None, request=req, span=INVALID_SPAN)  # type: ignore[arg-type]

    async def append(items: list[Pending]) -> None:
        await appender.append_group(ws, items, *args)
        assert all(p.answer is not None and p.answer.ok for p in items), items[0].answer

    owner = Actor(kind="person", id="usr_own")
    await append(
        [
            request(
                Actor(kind="operator", id="operator"),
                {"type": "workspace.created", "name": "Bench"},
                {
                    "type": "participant.joined",
                    "participant_id": "usr_own",
                    "kind": "person",
                    "name": "Arjun",
                    "role": "owner",
                },
                credentials=[
                    IssuedCredential(
                        credential_id="crd_usr_own", participant_id="usr_own", token_hash="h"
                    )
                ],
            )
        ]
    )
    for i in range(8):
        joined = {
            "type": "participant.joined",
            "participant_id": f"usr_{i}",
            "kind": "person",
            "name": f"Writer {i}",
        }
        await append([request(owner, joined)])
    room = {"type": "space.created", "kind": "group", "title": "Room"}
    made = [request(owner, {**room, "members": [f"usr_{i}" for i in range(8)]})]
    await append(made)
    space = made[0].answer.events[0]["space_id"]  # type: ignore[union-attr]

    def post(i: int) -> Pending:
        who = Actor(kind="person", id=f"usr_{i % 8}")
        return request(who, {"type": "message.post", "space_id": space, "text": f"hi {i}"})

    statements: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    from sqlalchemy import event

    event.listen(engine.sync_engine, "before_cursor_execute", count)
    idle: list[float] = []
    cpu_started = time.process_time()
    for i in range(posts):
        started = time.perf_counter()
        await append([post(i)])
        idle.append((time.perf_counter() - started) * 1000)
    idle_cpu = (time.process_time() - cpu_started) * 1000 / posts
    event.remove(engine.sync_engine, "before_cursor_execute", count)
    idle_statements = len(statements) / posts
    if os.environ.get("CHIPS_BENCH_SHOW_SQL"):
        for statement in statements[-int(idle_statements) :]:
            print(" ".join(statement.split())[:160], file=sys.stderr)
    loaded: list[float] = []
    started_all = time.perf_counter()
    loaded_cpu_started = time.process_time()
    for b in range(batches):
        items = [post(b * 64 + i) for i in range(64)]
        started = time.perf_counter()
        await append(items)
        loaded.append((time.perf_counter() - started) * 1000)
    elapsed = time.perf_counter() - started_all
    loaded_cpu = (time.process_time() - loaded_cpu_started) * 1000 / (64 * batches)
    await engine.dispose()
    return {
        "idle_p50_ms": round(statistics.median(idle), 2),
        "idle_p90_ms": round(sorted(idle)[int(len(idle) * 0.9)], 2),
        # The appender's own CPU (this process) per idle append, and its statements.
        "idle_cpu_ms": round(idle_cpu, 3),
        "idle_statements": round(idle_statements, 2),
        "loaded_batch_p50_ms": round(statistics.median(loaded), 2),
        "loaded_appends_per_second": round(64 * batches / elapsed, 1),
        "loaded_cpu_ms_per_append": round(loaded_cpu, 3),
    }


def one_round(posts: int, batches: int) -> dict[str, Any]:
    """A fresh database, migrated by the code under test, measured once, then dropped."""
    import psycopg

    name = f"chips_bench_{secrets.token_hex(4)}"
    with psycopg.connect(_plain(ADMIN), autocommit=True, connect_timeout=3) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = ADMIN.rsplit("/", 1)[0] + f"/{name}"
    try:
        subprocess.run(
            [sys.executable, "-m", "chips_common.db.migrate"],
            env={**os.environ, "CHIPS_DATABASE_URL": url},
            check=True,
            capture_output=True,
            timeout=300,
        )
        return asyncio.run(measure(url, posts, batches))
    finally:
        with psycopg.connect(_plain(ADMIN), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def tree_path(tree: Path) -> str:
    return ":".join(
        str(p) for p in sorted([*tree.glob("libs/*/src"), *tree.glob("services/*/src")])
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--posts", type=int, default=200, help="idle appends per round")
    parser.add_argument("--batches", type=int, default=20, help="batches of 64 per round")
    parser.add_argument("--versus", default="", help="an exported tree of another version")
    parser.add_argument("--label", default="", help="prefix of the result file")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_round(args.posts, args.batches)), flush=True)
        return
    runs: dict[str, list[dict[str, Any]]] = (
        {"this": [], "versus": []} if args.versus else {"this": []}
    )
    for _ in range(args.rounds):
        for which in runs:
            env = dict(os.environ)
            if which == "versus":
                env["PYTHONPATH"] = tree_path(Path(args.versus))
            command = [sys.executable, __file__, "--one", "--posts", str(args.posts)]
            command += ["--batches", str(args.batches)]
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            if done.returncode != 0:  # a round that failed (on a loaded machine) is said
                print(which, "round failed:", done.stderr.strip().splitlines()[-1:], flush=True)
                continue
            runs[which].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(which, runs[which][-1], flush=True)
    summary: dict[str, Any] = {
        "benchmark": "commit",
        "rounds": runs,
        "median": {
            which: {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
            for which, rounds in runs.items()
        },
        "versus": args.versus,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.label}commit.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary["median"]), flush=True)


if __name__ == "__main__":
    main()
