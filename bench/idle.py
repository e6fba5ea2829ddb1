"""What each process of an idle install spends of the CPU (issue 33): nothing happening.

Starts the whole system on free ports (as bench/fastpath.py does, one gateway), creates a
workspace with a harness and a room (so every timer has something to look at), waits for
it to settle, then reads each process's CPU (user + system, /proc) over ``--seconds`` with
no client doing anything, and prints milliseconds of CPU per second per process. Postgres
is the machine's, shared with whatever else runs: its figure (every postgres process's,
with its ended backends') is a bound, read with the load average.

Writes bench/results/<label>idle.json. With ``--versus TREE`` (a ``git archive`` of another
version), that version is measured too, first, labelled ``<label>versus-``; ``--rounds N``
alternates the two N times (versus, this, versus, this ...), one result file per round
after the first (``<label>idle-2.json`` ...).

    .venv/bin/python bench/idle.py [--seconds 30] [--settle 10] [--label before-]
        [--versus /tmp/tree --versus-code 'main at d1c8622'] [--rounds 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fastpath import RESULTS, commit, cpu_seconds, machine, postgres_cpu
from stackstart import bench_stack, service_pids

from chips_devstack.stack import UNLIMITED
from tests.e2e.client import Api


async def populate(base: str) -> None:
    """A workspace, a harness in a direct space, a room with people: what an install
    that is used and then left alone holds."""
    api = Api(base)
    owner = await api.create_workspace(name="Idle bench")
    harness, _ = await api.connect_harness(owner, "Idle harness")
    people = [await api.add_person(owner, f"Person {i}") for i in range(3)]
    await api.open_space(
        owner, "Idle room", [p.participant_id for p in people] + [harness.participant_id]
    )
    await api.close()


def measure(pids: dict[str, int], seconds: float) -> dict[str, float]:
    """Milliseconds of CPU per second each process spent over ``seconds``."""
    before = {n: cpu_seconds(p) for n, p in pids.items()}
    pg_before = postgres_cpu()
    started = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - started
    out = {n: 1000 * (cpu_seconds(p) - before[n]) / elapsed for n, p in pids.items()}
    out["postgres (whole machine)"] = 1000 * (postgres_cpu() - pg_before) / elapsed
    return {n: round(v, 2) for n, v in sorted(out.items())}


def one(label: str, code: str, tree: str, seconds: float, settle: float) -> None:
    with bench_stack({**UNLIMITED}, tree) as stack:
        print(f"stack up ({code or 'this tree'}); logs in {stack.root}", flush=True)
        asyncio.run(populate(stack.gateway_a))
        pids = service_pids(stack)
        time.sleep(settle)
        load_before = os.getloadavg()
        per_process = measure(pids, seconds)
        load_after = os.getloadavg()
    services = sum(v for n, v in per_process.items() if n not in ("s3", "postgres (whole machine)"))
    result: dict[str, Any] = {
        "benchmark": "idle",
        "seconds": seconds,
        "cpu_ms_per_second": per_process,
        # The services and NATS together (not the test S3, not the machine's Postgres).
        "services_and_nats_ms_per_second": round(services, 2),
        "machine": machine(),
        "commit": code or commit(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{label}idle.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result), flush=True)


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="how long to read the CPU")
    parser.add_argument("--settle", type=float, default=10.0, help="seconds left alone first")
    parser.add_argument("--label", default="", help="prefix of the result file, e.g. before-")
    parser.add_argument("--code", default="", help="what code ran, when not this tree")
    parser.add_argument("--versus", default="", help="an exported tree of another version")
    parser.add_argument("--versus-code", default="", help="what the other tree is")
    parser.add_argument("--rounds", type=int, default=1, help="alternations of the two")
    args = parser.parse_args()
    # (label, code, tree): the other version (bench/stackstart.py) first, then this tree.
    runs: list[tuple[str, str, str]] = []
    if args.versus:
        versus_code = args.versus_code or str(Path(args.versus))
        runs.append((f"{args.label}versus-", versus_code, args.versus))
    runs.append((args.label, args.code, ""))
    for r in range(args.rounds):
        suffix = "" if r == 0 else f"{r + 1}-"
        for label, code, tree in runs:
            one(label + suffix, code, tree, args.seconds, args.settle)


if __name__ == "__main__":
    main()
