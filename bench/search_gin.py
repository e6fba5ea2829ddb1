"""The GIN index's share of a batch's insert into the search index, in Postgres alone.

A database of its own with 50,000 rows in ``search_docs`` (20 workspaces, words from a
30,000-word vocabulary), then the statement the search service writes a batch of ten posts
with, timed by ``EXPLAIN ANALYZE`` inside a transaction that is rolled back: with the GIN
index (``fastupdate = off``, as it is made), and with it dropped in that transaction; the
two in turn, round for round.

    .venv/bin/python bench/search_gin.py --rounds 100

With ``--pending-list-kb N``, instead: two such databases, one with the index as it is made
and one with ``fastupdate = on`` and ``gin_pending_list_limit = N`` on every partition's
index; batches of ten posts written (and committed, so the pending list fills and is
flushed by the insert that overflows it) into the one and the other in turn, each followed
by searches of one workspace for a rare word, a common word and a prefix, all timed by
``EXPLAIN ANALYZE``: what the pending list saves the insert, and what scanning it costs a
search.

    .venv/bin/python bench/search_gin.py --rounds 300 --pending-list-kb 64 --out search-gin-pending
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg

RESULTS = Path(__file__).parent / "results"
ADMIN = os.environ.get(
    "CHIPS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
PLAIN = ADMIN.replace("postgresql+psycopg://", "postgresql://", 1)
SEED = (
    "INSERT INTO search_docs (workspace_id, doc_id, seq, space_id, room_id, kind,"
    " message_kind, message_id, author_id, ts, words, extra, tsv)"
    " SELECT 'ws_' || lpad((g % 20)::text, 2, '0'), 'seed' || g, g, 'spc', 'spc', 'message',"
    " 'text', 'seed' || g, 'usr', now(), w, '', to_tsvector('chips_search', w)"
    " FROM (SELECT g, (SELECT string_agg('w' || lpad((floor(random() * 30000))::int::text,"
    " 5, '0'), ' ') FROM generate_series(1, 8 + g % 2 - g % 2)) AS w"
    " FROM generate_series(1, 50000) g) s"
)
BATCH = (
    "INSERT INTO search_docs (workspace_id, doc_id, seq, space_id, room_id, kind,"
    " message_kind, message_id, author_id, ts, words, extra, tsv)"
    " SELECT u.w, u.d, u.s, 'spc', 'spc', 'message', 'text', u.d, 'usr', now(), u.t, '',"
    " to_tsvector('chips_search', u.t || E'\\n')"
    " FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::text[]) AS u(w, d, s, t)"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--out", default="search-gin")
    parser.add_argument("--pending-list-kb", type=int, default=0)
    args = parser.parse_args()
    if args.pending_list_kb:
        pending(args)
        return
    name = f"chips_gin_{secrets.token_hex(4)}"
    with psycopg.connect(PLAIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = ADMIN.rsplit("/", 1)[0] + f"/{name}"
    rng = random.Random(7)
    times: dict[str, list[float]] = {"with_gin": [], "without_gin": []}
    try:
        subprocess.run(
            [sys.executable, "-m", "chips_common.db.migrate"],
            env={**os.environ, "CHIPS_DATABASE_URL": url},
            check=True,
            capture_output=True,
        )
        load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
        with psycopg.connect(PLAIN.rsplit("/", 1)[0] + f"/{name}", autocommit=True) as conn:
            conn.execute(SEED)
            conn.execute("VACUUM ANALYZE search_docs")
            for n in range(args.rounds):
                for mode in ("with_gin", "without_gin")[:: 1 if n % 2 == 0 else -1]:
                    rows = [
                        (
                            f"ws_{rng.randrange(20):02d}",
                            f"n{n}{mode}{i}",
                            10**6 + i,
                            "load test line "
                            + " ".join(f"w{rng.randrange(30000):05d}" for _ in range(6)),
                        )
                        for i in range(10)
                    ]
                    with conn.transaction(force_rollback=True):
                        if mode == "without_gin":
                            conn.execute("DROP INDEX search_docs_tsv")
                        found = conn.execute(
                            "EXPLAIN (ANALYZE, FORMAT JSON) " + BATCH,
                            [list(column) for column in zip(*rows, strict=True)],
                        ).fetchone()
                        assert found is not None
                        times[mode].append(found[0][0]["Execution Time"])
        load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    finally:
        with psycopg.connect(PLAIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    figures = {
        "benchmark": "search_gin",
        "command": "python bench/search_gin.py " + " ".join(sys.argv[1:]),
        "load_before": load_before,
        "load_after": load_after,
        "rows_in_index": 50000,
        "posts_per_batch": 10,
        **{
            mode: {
                "median_ms": round(statistics.median(v), 3),
                "p90_ms": round(sorted(v)[int(0.9 * len(v))], 3),
                "p99_ms": round(sorted(v)[int(0.99 * len(v))], 3),
                "n": len(v),
            }
            for mode, v in times.items()
        },
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))


# What the search's statement asks of the index, without the rest of it (membership,
# snippets): one workspace's newest rows holding the words.
QUERY = (
    "EXPLAIN (ANALYZE, FORMAT JSON) SELECT doc_id FROM search_docs"
    " WHERE workspace_id = %s AND tsv @@ to_tsquery('chips_search', %s)"
    " ORDER BY seq DESC LIMIT 21"
)


def summary(v: list[float]) -> dict[str, float]:
    ordered = sorted(v)
    return {
        "median_ms": round(statistics.median(v), 3),
        "p90_ms": round(ordered[int(0.9 * len(v))], 3),
        "p99_ms": round(ordered[int(0.99 * len(v))], 3),
        "max_ms": round(ordered[-1], 3),
        "n": len(v),
    }


def pending(args: argparse.Namespace) -> None:
    names = {mode: f"chips_gin_{mode}_{secrets.token_hex(4)}" for mode in ("off", "pending")}
    base = PLAIN.rsplit("/", 1)[0]
    with psycopg.connect(PLAIN, autocommit=True) as conn:
        for name in names.values():
            conn.execute(f'CREATE DATABASE "{name}"')
    rng = random.Random(7)
    kinds = ("insert", "rare", "common", "prefix")
    times: dict[str, dict[str, list[float]]] = {m: {k: [] for k in kinds} for m in names}
    conns: dict[str, psycopg.Connection[Any]] = {}
    try:
        for mode, name in names.items():
            subprocess.run(
                [sys.executable, "-m", "chips_common.db.migrate"],
                env={**os.environ, "CHIPS_DATABASE_URL": ADMIN.rsplit("/", 1)[0] + f"/{name}"},
                check=True,
                capture_output=True,
            )
            conn = conns[mode] = psycopg.connect(f"{base}/{name}", autocommit=True)
            conn.execute(SEED)
            if mode == "pending":
                for (index,) in conn.execute(
                    "SELECT inhrelid::regclass::text FROM pg_inherits"
                    " WHERE inhparent = 'search_docs_tsv'::regclass"
                ).fetchall():
                    conn.execute(
                        f"ALTER INDEX {index} SET (fastupdate = on,"
                        f" gin_pending_list_limit = {args.pending_list_kb})"
                    )
            conn.execute("VACUUM ANALYZE search_docs")
        load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
        for n in range(args.rounds):
            rows = [
                (
                    f"ws_{rng.randrange(20):02d}",
                    f"n{n}p{i}",
                    10**6 + n * 10 + i,
                    "load test line " + " ".join(f"w{rng.randrange(30000):05d}" for _ in range(6)),
                )
                for i in range(10)
            ]
            workspace = f"ws_{rng.randrange(20):02d}"
            rare = f"w{rng.randrange(30000):05d}"
            prefix = f"w{rng.randrange(300):03d}:*"
            for mode in tuple(names)[:: 1 if n % 2 == 0 else -1]:
                conn = conns[mode]
                found = conn.execute(
                    "EXPLAIN (ANALYZE, FORMAT JSON) " + BATCH,
                    [list(column) for column in zip(*rows, strict=True)],
                ).fetchone()
                assert found is not None
                times[mode]["insert"].append(found[0][0]["Execution Time"])
                for kind, q in (("rare", rare), ("common", "load & test"), ("prefix", prefix)):
                    found = conn.execute(QUERY, (workspace, q)).fetchone()
                    assert found is not None
                    times[mode][kind].append(found[0][0]["Execution Time"])
        load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    finally:
        for conn in conns.values():
            conn.close()
        with psycopg.connect(PLAIN, autocommit=True) as conn:
            for name in names.values():
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    figures = {
        "benchmark": "search_gin_pending",
        "command": "python bench/search_gin.py " + " ".join(sys.argv[1:]),
        "load_before": load_before,
        "load_after": load_after,
        "rows_in_index": 50000,
        "posts_per_batch": 10,
        "pending_list_kb": args.pending_list_kb,
        **{
            ("fastupdate_off" if mode == "off" else "fastupdate_on"): {
                kind: summary(v) for kind, v in by_kind.items()
            }
            for mode, by_kind in times.items()
        },
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
