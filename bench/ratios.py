"""Chips against its floor and against Synapse, as ratios, in one run on one machine (issue 33).

Absolute figures on a shared two-core machine move with the neighbours; ratios measured
minutes apart move much less. One run of this script measures, one after the other:

  floor    bench/floor.py's append-direct stage (the fixed stack's bare append shape) one
           at a time, 8 in flight and 128 in flight
  synapse  bench/peers/synapse.py (Matrix Synapse on Postgres): sequential sends, 8 in
           flight, send -> seen by another user's /sync
  chips    bench/fastpath.py's seq, http8, pipe (16 sockets x 8 pipelined) and seen (a
           socket's send -> another socket sees it, idle), with every process's CPU per
           message; ``--tree DIR`` runs the services of an exported tree (git archive)
           instead of this one's, ``--twice`` runs Chips again after the others
  profile  (``--profile``) bench/profile.py under ``seq`` with py-spy on the gateway, the
           eventlog and the consumers, and the top items of each

then prints the table of ratios and writes bench/results/<label>ratios.json (the ratios,
each phase's figures and the profile's top items). Everything listens on 127.0.0.1, is
bounded in count and time and stops by itself.

    .venv/bin/python bench/ratios.py [--label before-] [--scale 0.5] [--profile]
        [--tree /tmp/base] [--only floor,synapse,chips]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
ROOT = BENCH.parent
PY = sys.executable
PROFILED = "gateway_a,eventlog,projector,search,referee,notifier"


def sh(args: list[str], env: dict[str, str] | None = None, timeout: int = 1800) -> None:
    print("$", " ".join(args), flush=True)
    subprocess.run(args, cwd=ROOT, env={**os.environ, **(env or {})}, check=True, timeout=timeout)


def load(name: str) -> dict[str, Any]:
    return dict(json.loads((RESULTS / name).read_text()))


def tree_env(tree: str) -> dict[str, str]:
    """The services of an exported tree ahead of this tree's editable installs. The CLI
    stays this tree's: the profile reads its traces with it, and it is not measured."""
    t = Path(tree)
    libs = [p for p in t.glob("libs/*/src") if p.parent.name != "chips_cli"]
    paths = sorted([*libs, *t.glob("services/*/src")])
    return {"PYTHONPATH": ":".join(str(p) for p in paths)}


def cpu_all(per: dict[str, float]) -> float:
    return round(sum(per.values()), 3)


def ratio(a: float | None, b: float | None, digits: int = 2) -> float | None:
    return round(a / b, digits) if a and b else None


def table(floor: dict[str, Any], synapse: dict[str, Any], chips: dict[str, Any]) -> dict[str, Any]:
    """The issue's table: each figure, and Chips's ratio to the floor and to Synapse."""
    stage = {(f["stage"], f["in_flight"]): f for f in floor.get("figures", [])}
    f1, f8, f128 = (stage.get(("append-direct", n), {}) for n in (1, 8, 128))
    seq, http8 = chips.get("seq", {}), chips.get("http8", {})
    pipe, seen = chips.get("pipe", {}), chips.get("seen", {})
    s_seq, s8, s_seen = (synapse.get(k, {}) for k in ("seq", "http8", "seen"))
    rows = {
        "sequential": {
            "chips": {"per_second": seq.get("msg_per_second"), "p50_ms": seq.get("p50_ms")},
            "synapse": {"per_second": s_seq.get("per_second"), "p50_ms": s_seq.get("p50_ms")},
            "floor": {"per_second": f1.get("per_second"), "p50_ms": f1.get("p50_ms")},
            "chips_vs_synapse": ratio(seq.get("msg_per_second"), s_seq.get("per_second")),
            "chips_p50_vs_floor_p50": ratio(seq.get("p50_ms"), f1.get("p50_ms")),
            "target": "p50 <= 2x the floor's; >= 5x Synapse",
        },
        "8 in flight": {
            "chips": {"per_second": http8.get("msg_per_second")},
            "synapse": {"per_second": s8.get("per_second")},
            "floor": {"per_second": f8.get("per_second")},
            "chips_vs_synapse": ratio(http8.get("msg_per_second"), s8.get("per_second")),
            "chips_vs_floor": ratio(http8.get("msg_per_second"), f8.get("per_second")),
            "target": ">= 0.5 of the floor; >= 5x Synapse",
        },
        "send->seen p50": {
            "chips": {"p50_ms": seen.get("p50_ms"), "p99_ms": seen.get("p99_ms")},
            "synapse": {"p50_ms": s_seen.get("p50_ms"), "p99_ms": s_seen.get("p99_ms")},
            "chips_faster_than_synapse": ratio(s_seen.get("p50_ms"), seen.get("p50_ms"), 1),
            "target": ">= 5x Synapse",
        },
        "16 x 8 pipelined": {
            "chips": {
                "acked_per_second": pipe.get("acked_per_second"),
                "p99_ms": pipe.get("p99_ms"),
                "errors": pipe.get("errors"),
            },
            "floor": {"per_second": f128.get("per_second"), "p99_ms": f128.get("p99_ms")},
            "chips_vs_floor": ratio(pipe.get("acked_per_second"), f128.get("per_second")),
            "target": ">= 0.5 of the floor's 128 in flight, 0 errors",
        },
        "socket send->seen idle p50": {
            "chips": {"p50_ms": seen.get("p50_ms")},
            "floor": {"p50_ms": f1.get("p50_ms")},
            "chips_vs_floor": ratio(seen.get("p50_ms"), f1.get("p50_ms"), 1),
            "target": "<= 3x the floor's append p50",
        },
    }
    cpu: dict[str, Any] = {}
    for name, c, f in (
        ("sequential", seq, f1),
        ("8 in flight", http8, f8),
        ("pipelined", pipe, f128),
    ):
        if c and f:
            chips_all = cpu_all(c["cpu_ms_per_message"])
            floor_all = cpu_all(f["cpu_ms_per_request"])
            cpu[name] = {
                "chips_ms": chips_all,
                "chips_per_process_ms": c["cpu_ms_per_message"],
                "floor_ms": floor_all,
                "floor_per_process_ms": f["cpu_ms_per_request"],
                "chips_vs_floor": ratio(chips_all, floor_all),
            }
    for name, s in (("sequential", s_seq), ("8 in flight", s8)):
        if s and name in cpu:
            cpu[name]["synapse_ms"] = cpu_all(s["cpu_ms_per_message"])
    rows["cpu per message, all processes"] = {**cpu, "target": "<= 3x the floor's"}
    return rows


def show(rows: dict[str, Any]) -> str:
    def fmt(d: dict[str, Any] | None) -> str:
        if not d:
            return "-"
        return (
            ", ".join(
                f"{k.removesuffix('_ms')} {v}" + (" ms" if k.endswith("_ms") else "")
                for k, v in d.items()
                if v is not None
            )
            or "-"
        )

    out = [
        "| figure | Chips | Synapse | floor | Chips vs Synapse | Chips vs floor |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        if name.startswith("cpu"):
            continue
        vs_syn = r.get("chips_vs_synapse") or r.get("chips_faster_than_synapse")
        vs_floor = r.get("chips_vs_floor") or r.get("chips_p50_vs_floor_p50")
        out.append(
            f"| {name} | {fmt(r.get('chips'))} | {fmt(r.get('synapse'))} | {fmt(r.get('floor'))}"
            f" | {f'{vs_syn}x' if vs_syn else '-'} | {f'{vs_floor}x' if vs_floor else '-'} |"
        )
    for name, c in rows["cpu per message, all processes"].items():
        if isinstance(c, dict):
            syn = f"{c['synapse_ms']} ms" if "synapse_ms" in c else "-"
            out.append(
                f"| CPU/message {name} | {c['chips_ms']} ms | {syn} | {c['floor_ms']} ms | - |"
                f" {c['chips_vs_floor']}x |"
            )
    return "\n".join(out)


def top_items(label: str, n: int = 8) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for proc in PROFILED.split(","):
        path = RESULTS / f"{label}profile-{proc}.txt"
        if path.exists():
            lines = path.read_text().splitlines()
            start = next((i for i, x in enumerate(lines) if x.startswith("by own time")), 0)
            own = lines[start + 1 :]
            own = own[: next((i for i, x in enumerate(own) if not x.strip()), len(own))]
            out[proc] = [x.strip() for x in own[:n]]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="", help="prefix of every result file")
    parser.add_argument("--scale", type=float, default=0.5, help="fastpath's --scale")
    parser.add_argument("--count", type=int, default=1000, help="floor's requests per stage")
    parser.add_argument("--synapse-count", type=int, default=300)
    parser.add_argument("--only", default="floor,synapse,chips", help="phases to run")
    parser.add_argument("--tree", default="", help="run the Chips services of this exported tree")
    parser.add_argument("--code", default="", help="what --tree is (e.g. 'main at 3acb90d')")
    parser.add_argument("--profile", action="store_true", help="py-spy under seq afterwards")
    parser.add_argument("--venv", default="", help="Synapse's venv (kept between runs)")
    args = parser.parse_args()
    phases = args.only.split(",")
    label = args.label
    env = tree_env(args.tree) if args.tree else {}
    code = ["--code", args.code or args.tree] if args.tree else []
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if "floor" in phases:
        sh(
            [
                PY,
                "bench/floor.py",
                "--count",
                str(args.count),
                "--label",
                label,
                "--stages",
                "append-direct:1,append-direct:8,append-direct:128",
            ]
        )
    if "synapse" in phases:
        venv = ["--venv", args.venv] if args.venv else []
        sh(
            [
                PY,
                "bench/peers/synapse.py",
                "--count",
                str(args.synapse_count),
                "--label",
                label,
                *venv,
            ]
        )
    if "chips" in phases:
        sh(
            [
                PY,
                "bench/fastpath.py",
                "--only",
                "seq,http8,pipe,seen",
                "--scale",
                str(args.scale),
                "--label",
                f"{label}chips-",
                *code,
            ],
            env,
        )
    if args.profile:
        sh(
            [
                PY,
                "bench/profile.py",
                "--load",
                "seq",
                "--seconds",
                "12",
                "--posts",
                "50",
                "--procs",
                PROFILED,
                "--label",
                label,
            ],
            env,
        )
    floor = load(f"{label}floor.json") if (RESULTS / f"{label}floor.json").exists() else {}
    synapse = load(f"{label}synapse.json") if (RESULTS / f"{label}synapse.json").exists() else {}
    chips = {
        k: load(f"{label}chips-{k}.json")
        for k in ("seq", "http8", "pipe", "seen")
        if (RESULTS / f"{label}chips-{k}.json").exists()
    }
    rows = table(floor, synapse, chips)
    text = show(rows)
    print(text, flush=True)
    profile = top_items(label) if args.profile else {}
    for proc, items in profile.items():
        print(f"\n{proc}, by own time:\n  " + "\n  ".join(items))
    result = {
        "benchmark": "ratios",
        "rows": rows,
        "table": text,
        "profile_top": profile,
        "code": args.code or args.tree or "this tree",
        "commit": chips.get("seq", {}).get("commit"),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "started": started,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{label}ratios.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
