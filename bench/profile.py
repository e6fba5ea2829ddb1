"""Where an append's time goes: one idle append's trace, and each process's profile under load.

Starts the whole system on free ports (127.0.0.1 only), then

1. posts POSTS message.post one at a time on an idle stack, a harness's socket
   subscribed, prints the trace of the last one (as ``chips trace`` shows it: every span
   with its offset and duration) and the median time of each hop over all of them;
2. runs a load for SECONDS while py-spy samples the processes of ``--procs`` (the gateway
   and the eventlog unless told), and prints each one's top functions by own time and by
   total time, and the CPU each process spent per message during the load. The load is
   ``pipe`` (bench/fastpath.py: 16 sockets x 8 in flight), ``seq`` (one HTTP post at a
   time, the idle append's cost), ``http8`` (8 HTTP posts in flight), ``seen`` (a
   person's socket posts, a harness's socket sees it, one at a time) or ``loaded``
   (``seen`` while ``--rate`` msg/s more go in).

Writes bench/results/<label>trace.txt and bench/results/<label>profile-<service>.txt (the
top lists), and keeps py-spy's raw stacks next to the stack's logs. Needs py-spy
(``uvx py-spy`` is used when it is not on PATH).

    .venv/bin/python bench/profile.py [--seconds 15] [--posts 100] [--label before-]
        [--load pipe|seq|http8|seen|loaded] [--rate 200] [--no-trace]
        [--procs gateway_a,eventlog,projector,search]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fastpath import Ws, cpu_seconds, http8, pipe, post, postgres_cpu, seen

from chips_cli import trace
from chips_devstack.stack import UNLIMITED, local_stack
from tests.e2e.client import Api

RESULTS = Path(__file__).parent / "results"


def py_spy() -> list[str]:
    found = shutil.which("py-spy")
    return [found] if found else ["uvx", "py-spy"]


async def idle_trace(base: str, trace_file: Path, count: int) -> tuple[str, str, Any, str]:
    """``count`` posts one at a time on an idle stack, a harness's socket subscribed.

    Returns the last post's trace, as ``chips trace`` renders it, and the median of each
    hop over every post whose spans were all written.
    """
    api = Api(base)
    owner = await api.create_workspace(name="Profile")
    harness, space = await api.connect_harness(owner, "Profile harness")
    await api.close()
    url = base.replace("http://", "ws://") + "/v1/ws"
    bot = await Ws.open(url, harness)
    await bot.conn.send(json.dumps({"frame": "subscribe", "workspace_id": owner.workspace_id}))
    headers = {"Authorization": f"Bearer {owner.token}"}
    trace_ids: list[str] = []
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        for i in range(count):
            r = await http.post(
                "/v1/events", json=post(space, f"idle {i}", f"idle-{i}"), headers=headers
            )
            r.raise_for_status()
            trace_ids.append(r.json().get("trace_id", ""))
            await asyncio.sleep(0.05)  # idle: each post alone on the stack
    await bot.conn.close()
    wanted = {"gateway.receive event", "eventlog.append", "eventlog.commit", "gateway.deliver"}
    by_trace: dict[str, dict[str, dict[str, Any]]] = {}
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if os.path.exists(trace_file):  # noqa: ASYNC240 - a bench, not a server
            by_trace = {}
            for span in trace.spans_from_file(trace_file):
                if span["trace_id"] in trace_ids and span["name"] in wanted:
                    by_trace.setdefault(span["trace_id"], {})[span["name"]] = span
            if len(by_trace.get(trace_ids[-1], {})) == len(wanted):
                break
        await asyncio.sleep(0.5)
    hops: dict[str, list[float]] = {}
    for spans in by_trace.values():
        if len(spans) < len(wanted):
            continue
        receive, append = spans["gateway.receive event"], spans["eventlog.append"]
        commit, deliver = spans["eventlog.commit"], spans["gateway.deliver"]
        for name, ns in (
            ("gateway → NATS → eventlog (request)", append["start_ns"] - receive["start_ns"]),
            ("eventlog: batch in Postgres, to commit", commit["end_ns"] - commit["start_ns"]),
            ("eventlog: commit → answer written", append["end_ns"] - commit["end_ns"]),
            ("eventlog → NATS → gateway (answer)", receive["end_ns"] - append["end_ns"]),
            ("gateway.receive (whole, gateway's view)", receive["end_ns"] - receive["start_ns"]),
            ("commit → gateway feed (publish, NATS)", deliver["start_ns"] - commit["end_ns"]),
            ("gateway feed: deliver to sockets", deliver["end_ns"] - deliver["start_ns"]),
        ):
            hops.setdefault(name, []).append(ns / 1e6)
    lines = [f"median of {len(next(iter(hops.values()), []))} idle posts, ms:"]
    lines += [f"  {statistics.median(v):7.2f}  {k}" for k, v in hops.items()]
    breakdown = "\n".join(lines)
    text = "no trace"
    spans_all = trace.spans_from_file(trace_file) if os.path.exists(trace_file) else []  # noqa: ASYNC240
    message_ids = {
        s["attributes"]["chips.message_id"]
        for s in spans_all
        if s["trace_id"] == trace_ids[-1] and "chips.message_id" in s.get("attributes", {})
    }
    if message_ids:
        found = trace.traces_for(trace.parse_id(message_ids.pop()), spans_all)
        text = "\n\n".join(trace.render(tid, ss) for tid, ss in found.items())
    return text, breakdown, owner, space


async def seq_load(base: str, who: Any, space: str, seconds: float) -> dict[str, Any]:
    """One HTTP post at a time for ``seconds``: how many, and their median."""
    latencies: list[float] = []
    headers = {"Authorization": f"Bearer {who.token}"}
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        started = time.perf_counter()
        i = 0
        while time.perf_counter() - started < seconds:
            t = time.perf_counter()
            r = await http.post(
                "/v1/events", json=post(space, f"seq {i}", f"seq-{i}-{t}"), headers=headers
            )
            r.raise_for_status()
            latencies.append(time.perf_counter() - t)
            i += 1
        elapsed = time.perf_counter() - started
    return {
        "count": len(latencies),
        "msg_per_second": round(len(latencies) / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
    }


async def workspace(base: str) -> tuple[Any, Any, str]:
    api = Api(base)
    owner = await api.create_workspace(name="Profile")
    harness, space = await api.connect_harness(owner, "Profile harness")
    await api.close()
    return owner, harness, space


def top(raw: Path, n: int = 25) -> str:
    """Top functions by own samples and by total samples from py-spy's raw (collapsed) output."""
    own: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    samples = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        k = int(count)
        samples += k
        frames = stack.split(";")
        own[frames[-1]] += k
        for f in set(frames):
            total[f] += k
    out = [f"{samples} samples (idle waiting excluded)", "", "by own time:"]
    out += [f"  {100 * c / samples:5.1f}%  {f}" for f, c in own.most_common(n)]
    out += ["", "by total time (self and callees):"]
    out += [f"  {100 * c / samples:5.1f}%  {f}" for f, c in total.most_common(n)]
    return "\n".join(out)


def main() -> None:
    # Stopped (by timeout, say), still stop the stack's processes on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--label", default="")
    parser.add_argument("--posts", type=int, default=100, help="idle posts for the breakdown")
    parser.add_argument(
        "--load", choices=["pipe", "seq", "http8", "seen", "loaded"], default="pipe"
    )
    parser.add_argument("--rate", type=int, default=200, help="background msg/s of loaded")
    parser.add_argument("--procs", default="gateway_a,eventlog", help="processes to sample")
    parser.add_argument("--no-trace", action="store_true", help="skip the idle trace")
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    with local_stack(prefix="chips-bench-", gateways=1, env=UNLIMITED) as stack:
        trace_file = Path(stack.env["CHIPS_TRACE_FILE"])
        if args.no_trace or args.load in ("seen", "loaded"):
            owner, harness, space = asyncio.run(workspace(stack.gateway_a))
        else:
            text, breakdown, owner, space = asyncio.run(
                idle_trace(stack.gateway_a, trace_file, args.posts)
            )
            (RESULTS / f"{args.label}trace.txt").write_text(f"{text}\n\n{breakdown}\n")
            print(f"{text}\n\n{breakdown}", flush=True)
        url = stack.gateway_a.replace("http://", "ws://") + "/v1/ws"
        pids = {
            n.removeprefix("infra-"): p.pid
            for n, p in stack.procs.items()
            if n != "infra-redis" and p.popen is not None
        }
        cpu_before = {n: cpu_seconds(p) for n, p in pids.items()}
        pg_before = postgres_cpu()
        spies = {}
        for name in args.procs.split(","):
            out = stack.root / f"py-spy-{name}.txt"
            spies[name] = (
                out,
                subprocess.Popen(
                    [
                        *py_spy(),
                        "record",
                        "--pid",
                        str(stack.procs[name].pid),
                        "--duration",
                        str(args.seconds),
                        "--rate",
                        "200",
                        "--format",
                        "raw",
                        "--nonblocking",
                        "-o",
                        str(out),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                ),
            )
        if args.load == "pipe":
            load = asyncio.run(pipe(url, [owner], space, 100_000, args.seconds + 2))
        elif args.load == "seen":
            load = asyncio.run(seen(url, owner, harness, space, 100_000, args.seconds + 2))
        elif args.load == "loaded":
            load = asyncio.run(
                seen(url, owner, harness, space, 100_000, args.seconds + 2, rate=args.rate)
            )
        elif args.load == "http8":
            load = asyncio.run(http8(stack.gateway_a, [owner], space, 1_000_000, args.seconds + 2))
        else:
            load = asyncio.run(seq_load(stack.gateway_a, owner, space, args.seconds + 2))
        cpu = {n: cpu_seconds(p) - cpu_before[n] for n, p in pids.items()}
        cpu["postgres (whole machine)"] = postgres_cpu() - pg_before
        load["cpu_ms_per_message (py-spy sampling included)"] = {
            n: round(1000 * c / max(1, load["count"]), 3) for n, c in sorted(cpu.items())
        }
        print(f"load while profiling ({args.load}): {load}", flush=True)
        for name, (out, proc) in spies.items():
            proc.wait(timeout=60)
            report = top(out) if out.exists() else f"py-spy wrote nothing for {name}"
            (RESULTS / f"{args.label}profile-{name}.txt").write_text(
                f"load: {load}\nload average: {os.getloadavg()}\n\n{report}\n"
            )
            print(f"\n===== {name} =====\n{report}", flush=True)


if __name__ == "__main__":
    main()
