"""Chips and its floor measured in turns, both up at once, each figure beside its floor.

``bench/ratios.py`` measures the floor, then Synapse, then Chips: a minute or more
apart, on a machine whose speed moves by half within minutes (two runs of the same code
there gave 8 in flight at 0.40 and at 0.67 of the floor). Here the floor's processes and
the whole of Chips are up together, and each of Chips's figures is measured in short
slices right beside the floor stage it is held against, the order turned every round:

  sequential   fastpath's seq, one HTTP post at a time   beside append-direct, 1 at a time
  8 in flight  fastpath's http8                          beside append-direct, 8 in flight
  pipelined    fastpath's pipe (16 sockets x 8)          beside append-direct, 128 in flight
  socket idle  fastpath's seen (a socket's send -> another socket sees it, one at a time)
                                                         beside append-direct, 1 at a time

A slice's CPU is counted per process from its first request (its warm-up ones included,
and counted) until the stack it loaded is idle again: what the consumers fold after the
last answer is a message's cost too, and must not run into the next slice. Each round
gives each ratio; the table shows, per ratio, its median over the rounds and its lowest
and highest. A first round warms every side and is not counted. Everything listens on
127.0.0.1, is bounded in count and time, and stops by itself. Writes
bench/results/<label>paired.json.

``--versus DIR`` runs a second Chips stack of another version's exported tree (``git
archive``) beside this one, measured in the same rounds: before and after, each against
the floor beside it, in one run.

Chips's stacks write every span to a trace file, as ``make up`` does (``--traces file``).
``--traces off`` gives them nowhere to send spans, so none is recorded (docs/adr/0173), as
the floor records none; ``--versus-traces off`` with no ``--versus`` runs this tree a
second time that way, beside the traced one, in the same rounds.

    .venv/bin/python bench/paired.py [--rounds 7] [--scale 1.0] [--tree DIR]
        [--traces file|off] [--versus DIR --versus-code 'main at abc1234']
        [--versus-traces file|off] [--label x-]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fastpath
import floor
from stackstart import bench_stack, service_pids

from chips_devstack.stack import UNLIMITED

RESULTS = Path(__file__).parent / "results"

# A stack is idle when its processes together spent at most this much CPU in a window.
IDLE_WINDOW_SECONDS = 0.5
IDLE_CPU_SECONDS = 0.03
IDLE_CAP_SECONDS = 15.0

# (figure, the floor's stage in flight, what is compared, the target)
PAIRS = [
    ("sequential", 1, "p50 <= 2x the floor's; CPU/message <= 3x"),
    ("8 in flight", 8, ">= 0.5 of the floor's msg/s; CPU/message <= 3x"),
    ("pipelined", 128, ">= 0.5 of the floor's 128 in flight, 0 errors; CPU/message <= 3x"),
    ("socket idle", 1, "send -> seen p50 <= 3x the floor's append p50"),
]


def cpu_now(pids: dict[str, int]) -> dict[str, float]:
    return {
        **{name: fastpath.cpu_seconds(pid) for name, pid in pids.items()},
        "postgres (whole machine)": fastpath.postgres_cpu(),
    }


async def idle(pids: dict[str, int]) -> float:
    """Wait until the processes are idle (see IDLE_*); the seconds it took."""
    started = time.perf_counter()
    last = sum(cpu_now(pids).values())
    while time.perf_counter() - started < IDLE_CAP_SECONDS:
        await asyncio.sleep(IDLE_WINDOW_SECONDS)
        now = sum(cpu_now(pids).values())
        if now - last <= IDLE_CPU_SECONDS:
            break
        last = now
    return round(time.perf_counter() - started, 2)


async def measured(
    run: Callable[[], Awaitable[dict[str, Any]]], pids: dict[str, int]
) -> dict[str, Any]:
    """One slice: its figures, and the CPU each process spent per request until idle."""
    before = cpu_now(pids)
    figures = await run()
    figures["idle_after_seconds"] = await idle(pids)
    after = cpu_now(pids)
    requests = figures["count"] + figures.get("warm", 0)
    per = {k: round(1000 * (after[k] - before[k]) / requests, 3) for k in before}
    figures["cpu_ms_per_message"] = per
    figures["cpu_ms_all"] = round(sum(per.values()), 3)
    return figures


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def compare(figure: str, chips: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """One round's ratios of a figure: Chips's against the floor's beside it."""
    out: dict[str, Any] = {}
    if figure in ("sequential", "socket idle"):
        out["p50_vs_floor"] = ratio(chips["p50_ms"], base["p50_ms"])
    if figure == "8 in flight":
        out["throughput_vs_floor"] = ratio(chips["msg_per_second"], base["per_second"])
    if figure == "pipelined":
        out["throughput_vs_floor"] = ratio(chips["acked_per_second"], base["per_second"])
        out["errors"] = chips["errors"]
    if figure != "socket idle":
        out["cpu_vs_floor"] = ratio(chips["cpu_ms_all"], base["cpu_ms_all"])
    return out


def spread(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 3),
        "lowest": min(values),
        "highest": max(values),
    }


# The figures of one side that the summary gives the median of.
SHOWN = ("p50_ms", "p99_ms", "per_second", "msg_per_second", "acked_per_second", "cpu_ms_all")


def summarize(rounds: list[dict[str, Any]], sides: list[str]) -> dict[str, Any]:
    """Per figure, per Chips side and ratio: the median over the rounds, the lowest and the
    highest; and the median of each side's own figures (the floor's too)."""
    out: dict[str, Any] = {}
    for figure, _, target in PAIRS:
        rows = [r[figure] for r in rounds]
        row_out: dict[str, Any] = {"target": target, "ratios": {}}
        for side in sides:
            ratios: dict[str, Any] = {}
            for key in rows[0]["ratios"][side]:
                values = [
                    row["ratios"][side][key] for row in rows if row["ratios"][side][key] is not None
                ]
                ratios[key] = sum(values) if key == "errors" else spread(values)
            row_out["ratios"][side] = ratios
        for side in ["floor", *sides]:
            row_out[side] = {
                key: round(statistics.median([row[side][key] for row in rows]), 3)
                for key in SHOWN
                if rows[0][side].get(key) is not None
            }
        out[figure] = row_out
    return out


def show(summary: dict[str, Any], sides: list[str]) -> str:
    lines = [
        "| figure | side | its figures (median) | vs the floor beside it: median (lowest-highest)"
        " | target |",
        "|---|---|---|---|---|",
    ]
    for figure, row in summary.items():
        base = ", ".join(f"{k} {v}" for k, v in row["floor"].items())
        lines.append(f"| {figure} | floor | {base} | - | {row['target']} |")
        for side in sides:
            own = ", ".join(f"{k} {v}" for k, v in row[side].items())
            ratios = "; ".join(
                f"{k} {v}"
                if not isinstance(v, dict)
                else f"{k} {v['median']} ({v['lowest']}-{v['highest']})"
                for k, v in row["ratios"][side].items()
            )
            lines.append(f"| {figure} | {side} | {own} | {ratios} | |")
    return "\n".join(lines)


Run = Callable[[], Awaitable[dict[str, Any]]]


async def chips_runs(base: str, scale: float) -> dict[str, Run]:
    """Each figure of one Chips stack, in a workspace made for it."""
    b = await fastpath.prepare(base)
    n = lambda x: max(1, int(x * scale))  # noqa: E731
    cap = 30
    return {
        "sequential": lambda: fastpath.seq(base, b.owner, b.space, n(400), cap),
        "8 in flight": lambda: fastpath.http8(base, b.writers, b.room, n(1200), cap),
        "pipelined": lambda: fastpath.pipe(b.url, b.writers, b.room, n(100), cap),
        "socket idle": lambda: fastpath.seen(b.url, b.owner, b.harness, b.space, n(150), cap),
    }


async def run_rounds(
    stacks: dict[str, tuple[str, dict[str, int]]],
    floor_base: str,
    floor_pids: dict[str, int],
    rounds: int,
    scale: float,
) -> list[dict[str, Any]]:
    """``rounds`` rounds; in each, every figure measured on the floor and on each Chips
    stack (``stacks``: its label, base URL and pids) one after another, the order turned
    by one each round."""
    runs = {label: await chips_runs(base, scale) for label, (base, _) in stacks.items()}
    n = lambda x: max(1, int(x * scale))  # noqa: E731
    floor_counts = {1: n(400), 8: n(1200), 128: n(1600)}
    for _, pids in stacks.values():
        await idle(pids)
    out = []
    # Round 0 warms every side (a stack just started is still settling) and is not kept.
    for r in range(-1, rounds):
        this: dict[str, Any] = {}
        for figure, inflight, _ in PAIRS:

            def base_run(k: int = inflight) -> Awaitable[dict[str, Any]]:
                return floor.measure(floor_base, "/append-direct", floor_counts[k], k, {})

            sides: list[tuple[str, Run, dict[str, int]]] = [("floor", base_run, floor_pids)]
            sides += [(label, runs[label][figure], pids) for label, (_, pids) in stacks.items()]
            turn = max(r, 0) % len(sides)
            sides = sides[turn:] + sides[:turn]
            got = {side: await measured(run, pids) for side, run, pids in sides}
            got["floor"].pop("cpu_ms_per_request", None)  # its own count: Postgres only
            this[figure] = {
                "order": [side for side, _, _ in sides],
                **got,
                "ratios": {label: compare(figure, got[label], got["floor"]) for label in stacks},
            }
        brief = {f: v["ratios"] for f, v in this.items()}
        print(json.dumps({"round": r + 1, **brief}), flush=True)
        if r >= 0:
            out.append(this)
    return out


def traced(traces: str) -> dict[str, str]:
    """A Chips stack's environment for where its spans go: the stack's trace file (as
    ``make up``), or nowhere, so that none is recorded (docs/adr/0173)."""
    if traces == "off":
        return {"CHIPS_TRACE_FILE": "", "OTEL_EXPORTER_OTLP_ENDPOINT": ""}
    return {}


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every count")
    parser.add_argument("--tree", default="", help="run the Chips services of this exported tree")
    parser.add_argument("--code", default="", help="what --tree is (e.g. 'main at 3acb90d')")
    parser.add_argument(
        "--versus",
        default="",
        help="another version's exported tree, measured beside this one in every round",
    )
    parser.add_argument("--versus-code", default="", help="what --versus is")
    parser.add_argument(
        "--traces",
        choices=["file", "off"],
        default="file",
        help="where Chips's spans go: a trace file, or nowhere (none recorded)",
    )
    parser.add_argument(
        "--versus-traces",
        choices=["file", "off"],
        default="",
        help="where the second stack's spans go (alone: this tree again, traced so)",
    )
    parser.add_argument("--label", default="", help="prefix of the result file")
    parser.add_argument(
        "--only", default="", help="figures to measure, comma-separated (default: all)"
    )
    args = parser.parse_args()
    if args.only:
        wanted = {f.strip() for f in args.only.split(",")}
        unknown = wanted - {figure for figure, _, _ in PAIRS}
        if unknown:
            parser.error(f"unknown figures {sorted(unknown)}; one of {[p[0] for p in PAIRS]}")
        PAIRS[:] = [p for p in PAIRS if p[0] in wanted]
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    code = args.code or (args.tree or fastpath.commit())
    trees = {"chips": (args.tree, code, args.traces)}
    if args.versus or args.versus_traces:
        versus_code = args.versus_code or args.versus or code
        trees["versus"] = (args.versus or args.tree, versus_code, args.versus_traces or args.traces)
    with contextlib.ExitStack() as up:
        floor_base, floor_pids = up.enter_context(floor.floor_stack())
        stacks: dict[str, tuple[str, dict[str, int]]] = {}
        for label, (tree, what, traces) in trees.items():
            env = {**UNLIMITED, **traced(traces)}
            stack = up.enter_context(bench_stack(env, tree))
            print(f"{label} ({what}, traces {traces}) up; logs in {stack.root}", flush=True)
            stacks[label] = (stack.gateway_a, service_pids(stack))
        rounds = asyncio.run(run_rounds(stacks, floor_base, floor_pids, args.rounds, args.scale))
    summary = summarize(rounds, list(trees))
    print(show(summary, list(trees)), flush=True)
    result = {
        "benchmark": "paired",
        "code": {label: what for label, (_, what, _) in trees.items()},
        "traces": {label: traces for label, (_, _, traces) in trees.items()},
        "summary": summary,
        "rounds": rounds,
        "machine": fastpath.machine(),
        "started": started,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.label}paired.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
