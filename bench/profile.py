"""Where an append's time goes: one idle append's trace, and each process's profile under load.

Starts the whole system on free ports (127.0.0.1 only), then

1. posts a few message.post one at a time on an idle stack and prints the trace of the
   last one (as ``chips trace`` shows it: every span with its offset and duration);
2. runs the pipelined load of bench/fastpath.py (16 sockets x 8 in flight) for SECONDS
   while py-spy samples the gateway and the eventlog, and prints each one's top functions
   by own time and by total time.

Writes bench/results/<label>trace.txt and bench/results/<label>profile-<service>.txt (the
top lists), and keeps py-spy's raw stacks next to the stack's logs. Needs py-spy
(``uvx py-spy`` is used when it is not on PATH).

    .venv/bin/python bench/profile.py [--seconds 15] [--label before-]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fastpath import pipe, post

from chips_cli import trace
from chips_devstack.stack import local_stack
from tests.e2e.client import Api

RESULTS = Path(__file__).parent / "results"


def py_spy() -> list[str]:
    found = shutil.which("py-spy")
    return [found] if found else ["uvx", "py-spy"]


async def idle_trace(base: str, trace_file: Path) -> tuple[str, Any, Any, str]:
    api = Api(base)
    owner = await api.create_workspace(name="Profile")
    harness, space = await api.connect_harness(owner, "Profile harness")
    await api.close()
    headers = {"Authorization": f"Bearer {owner.token}"}
    trace_id = ""
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        for i in range(30):
            r = await http.post(
                "/v1/events", json=post(space, f"idle {i}", f"idle-{i}"), headers=headers
            )
            r.raise_for_status()
            trace_id = r.json().get("trace_id", "")
            await asyncio.sleep(0.05)
    text = f"no trace for {trace_id}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if os.path.exists(trace_file):  # noqa: ASYNC240 - a bench, not a server
            spans = trace.spans_from_file(trace_file)
            message_ids = {
                s["attributes"]["chips.message_id"]
                for s in spans
                if s["trace_id"] == trace_id and "chips.message_id" in s.get("attributes", {})
            }
            if message_ids:
                found = trace.traces_of(message_ids.pop(), spans)
                services = {s["service"] for t in found.values() for s in t}
                if {"chips-gateway", "chips-eventlog", "chips-projector"} <= services:
                    text = "\n\n".join(trace.render(tid, ss) for tid, ss in found.items())
                    break
        await asyncio.sleep(0.5)
    return text, owner, harness, space


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    with local_stack(prefix="chips-bench-", gateways=1) as stack:
        trace_file = Path(stack.env["CHIPS_TRACE_FILE"])
        text, owner, _, space = asyncio.run(idle_trace(stack.gateway_a, trace_file))
        (RESULTS / f"{args.label}trace.txt").write_text(text + "\n")
        print(text, flush=True)
        url = stack.gateway_a.replace("http://", "ws://") + "/v1/ws"
        spies = {}
        for name in ("gateway_a", "eventlog"):
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
        load = asyncio.run(pipe(url, owner, space, 100_000, args.seconds + 2))
        print(f"load while profiling: {load}", flush=True)
        for name, (out, proc) in spies.items():
            proc.wait(timeout=60)
            report = top(out) if out.exists() else f"py-spy wrote nothing for {name}"
            (RESULTS / f"{args.label}profile-{name}.txt").write_text(
                f"load: {load}\nload average: {os.getloadavg()}\n\n{report}\n"
            )
            print(f"\n===== {name} =====\n{report}", flush=True)


if __name__ == "__main__":
    main()
