"""Python calls per message in each process, counted, not sampled.

py-spy on a loaded machine samples a process waiting for a core as if it ran; a count of
the calls each process makes per message does not move with the load. Starts the whole
system (as bench/fastpath.py does), each service with ``bench/calls_site`` on its path,
posts ``--count`` messages one at a time over HTTP (fastpath's ``seq``), 8 in flight
(``http8``), or one at a time from a socket while a harness's socket sees each
(``seen``), with every service's calls counted by cProfile for just that while, and
prints per process: the CPU it spent per message (user and system, from /proc), its
Python calls per message, and its functions with the most calls and the most time of
their own (cProfile's times are wall times and move with the load; read the counts).

Writes bench/results/<label>calls.json (the figures) and keeps each process's profile in
the stack's directory (``python -m pstats`` reads them).

    .venv/bin/python bench/calls.py [--count 500] [--load seq|http8|seen] [--tree DIR]
        [--top 25] [--label before-]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import pstats
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fastpath import commit, http8, seen, seq
from stackstart import bench_stack, service_pids

from chips_devstack.stack import UNLIMITED
from tests.e2e.client import Api

RESULTS = Path(__file__).parent / "results"
SITE = Path(__file__).resolve().parent / "calls_site"
TICK = os.sysconf("SC_CLK_TCK")
NOT_PYTHON = ("nats", "s3", "redis")


def user_system(pid: int) -> tuple[float, float]:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    return int(fields[11]) / TICK, int(fields[12]) / TICK


def short(path: str) -> str:
    return path.split("site-packages/")[-1].split("/src/")[-1].split("/lib/python3")[-1]


def tops(profile: Path, count: int, top: int) -> dict[str, Any]:
    stats = pstats.Stats(str(profile))
    rows = stats.stats  # type: ignore[attr-defined]
    calls = sum(v[1] for v in rows.values())

    def line(item: Any) -> str:
        (file, number, name), (_, ncalls, own, _, _) = item
        return (
            f"{ncalls / count:8.1f} calls {own / count * 1000:7.3f} ms own  "
            f"{name} ({short(file)}:{number})"
        )

    # Python functions only: a builtin's calls are counted in its caller's.
    python = [kv for kv in rows.items() if kv[0][0] != "~"]
    by_calls = sorted(python, key=lambda kv: -kv[1][1])[:top]
    by_own = sorted(rows.items(), key=lambda kv: -kv[1][2])[:top]
    return {
        "calls_per_message": round(calls / count),
        "most_calls": [line(i) for i in by_calls],
        "most_own_time": [line(i) for i in by_own],
    }


async def workspace(base: str) -> tuple[Any, Any, str, list[Any], str]:
    api = Api(base)
    owner = await api.create_workspace(name="Calls bench")
    harness, space = await api.connect_harness(owner, "Bench harness")
    writers = [await api.add_person(owner, f"Writer {i}") for i in range(8)]
    room = await api.open_space(
        owner, "Bench room", [w.participant_id for w in writers] + [harness.participant_id]
    )
    await api.close()
    return owner, harness, space, writers, room


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--load", choices=["seq", "http8", "seen"], default="seq")
    parser.add_argument("--tree", default="", help="an exported tree of another version")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    profiles = Path(tempfile.mkdtemp(prefix="chips-calls-profiles-"))
    env = {**UNLIMITED, "CHIPS_BENCH_CPROFILE": str(profiles)}
    # bench/calls_site first on every service's path, then the other tree's packages if any.
    with bench_stack(env, args.tree, prefix="chips-calls-", first=[str(SITE)]) as stack:
        owner, harness, space, writers, room = asyncio.run(workspace(stack.gateway_a))
        time.sleep(2)
        pids = service_pids(stack)
        python = {n: p for n, p in pids.items() if n not in NOT_PYTHON}
        for pid in python.values():
            os.kill(pid, signal.SIGUSR1)
        before = {n: user_system(p) for n, p in pids.items()}
        load_before = os.getloadavg()
        if args.load == "seq":
            figures = asyncio.run(seq(stack.gateway_a, owner, space, args.count, 300))
        elif args.load == "http8":
            figures = asyncio.run(http8(stack.gateway_a, writers, room, args.count, 300))
        else:
            url = stack.gateway_a.replace("http://", "ws://") + "/v1/ws"
            figures = asyncio.run(seen(url, owner, harness, space, args.count, 300))
        time.sleep(1.5)  # the consumers' last folds
        after = {n: user_system(p) for n, p in pids.items()}
        for pid in python.values():
            os.kill(pid, signal.SIGUSR2)
        time.sleep(2)
        count = figures["count"]
        out: dict[str, Any] = {
            "benchmark": f"calls.{args.load}",
            "count": count,
            "msg_per_second": figures.get("msg_per_second")
            or round(figures["count"] / figures["seconds"], 1),
            "processes": {},
            "machine": f"{platform.machine()}, Python {platform.python_version()}, "
            f"{os.cpu_count()} cores",
            "commit": args.tree or commit(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        for name, pid in pids.items():
            user = (after[name][0] - before[name][0]) / count * 1000
            system = (after[name][1] - before[name][1]) / count * 1000
            row: dict[str, Any] = {"user_ms": round(user, 3), "system_ms": round(system, 3)}
            profile = profiles / f"{pid}.prof"
            if name in python and profile.exists():
                row.update(tops(profile, count, args.top))
            out["processes"][name] = row
            print(
                f"\n===== {name}: user {user:.2f} + system {system:.2f} ms a message"
                + (
                    f", {row['calls_per_message']} Python calls"
                    if "calls_per_message" in row
                    else ""
                )
            )
            for text in row.get("most_calls", [])[: args.top]:
                print("  " + text)
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"{args.label}calls.json").write_text(json.dumps(out, indent=2) + "\n")
        print(f"\nprofiles in {profiles}", flush=True)


if __name__ == "__main__":
    main()
