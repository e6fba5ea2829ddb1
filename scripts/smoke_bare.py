"""The bare-machine smoke: `make up` where nothing answers, the README's steps, `make down`.

Every infrastructure URL points at a port where nothing listens and CHIPS_PORT_BASE moves
the services to a free range, so `make up` must start NATS, Redis, an S3 endpoint and an
embedded Postgres itself, as on a machine that runs none of them, and collide with nothing
the machine runs. Then the README's steps and the harness guide's, each block as written
(tests/doc_steps.py), as a new user follows them in a directory of their own: a workspace,
a person, the echo harness started in the background and answering `chips say`, a post
over plain HTTP; then `chips trace` of the message it answered. Then `make down`, and a
check that no process it started is left. Run by .ci/run; exits non-zero, saying why, on
any failure.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
SPAN = 10  # ports a stack takes from its base
ANSWER_SECONDS = 10  # the README's echo harness answers within seconds
PAGE_URL = "http://127.0.0.1:8080"  # where the pages say Chips answers, without moved ports

sys.path.insert(0, str(ROOT))
from tests.doc_steps import Page, StepFailed  # noqa: E402


class SmokeFailed(Exception):
    pass


def answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.3)
        return s.connect_ex(("127.0.0.1", port)) == 0


def free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return not answers(port)


def free_base() -> int:
    """A base whose whole range of ports is free, away from the usual ones."""
    for base in range(21000 + secrets.randbelow(50) * 100, 60000, 100):
        if all(free(base + i) for i in range(SPAN)):
            return base
    raise SmokeFailed("no free range of ports for CHIPS_PORT_BASE")


def dead_port(taken: set[int]) -> int:
    """A port where nothing listens, outside the stack's own range."""
    while True:
        port = 30000 + secrets.randbelow(20000)
        if port not in taken and free(port):
            taken.add(port)
            return port


def run(argv: list[str], env: dict[str, str], timeout: float = 300) -> str:
    done = subprocess.run(
        argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    out = done.stdout + done.stderr
    print(f"$ {' '.join(argv)}\n{out.rstrip()}", flush=True)
    if done.returncode != 0:
        raise SmokeFailed(f"{' '.join(argv)} exited {done.returncode}")
    return out


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise SmokeFailed(what)


def follow(page: str, env: dict[str, str], url: str) -> tuple[dict[str, str], Path]:
    """A page's steps, as written, in a new directory of the checkout's (``$PWD/.venv``):
    the environment its terminal is left with, and the directory."""
    workdir = Path(tempfile.mkdtemp(prefix="chips-smoke-page-"))
    (workdir / ".venv").symlink_to(ROOT / ".venv")
    print(f"--- {page}, in {workdir}", flush=True)
    steps = Page(ROOT / page, workdir, env, same={PAGE_URL: url})
    started = time.monotonic()
    left = steps.follow()
    ran = ", ".join(f"{n} {kind}" for kind, n in sorted(steps.ran.items()))
    took = time.monotonic() - started
    print(f"--- {page}: every step works as written ({ran}) in {took:.0f} s", flush=True)
    return left, workdir


def smoke(env: dict[str, str], run_dir: Path) -> None:
    chips = str(BIN / "chips")
    out = run(["make", "up"], env)
    for started in ("started NATS", "started Redis", "started S3", "started Postgres"):
        expect(started in out, f"`make up` did not say {started!r}")
    expect("using the" not in out, "`make up` says it used something, but nothing answered")
    expect("Chips is up" in out, "`make up` did not say Chips is up")
    again = run(["make", "up"], env)
    expect("already up" in again, "a second `make up` did not say Chips is already up")
    expect("running" in run(["make", "status"], env), "`make status` lists nothing")

    # The README, as a new user reads it: nothing of Chips on the PATH yet.
    url = f"http://127.0.0.1:{env['CHIPS_PORT_BASE']}"
    path = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if Path(p) != BIN)
    readme, workdir = follow("README.md", {**env, "PATH": path}, url)
    expect(readme.get("CHIPS_URL") == url, f"the README's terminal has {readme.get('CHIPS_URL')}")

    # The guide, from what its reader has in hand: a workspace of their own and its token.
    made = json.loads(
        run([chips, "workspace", "create", "--name", "Northwind", "--owner", "Arjun Rao"], env)
    )
    mine = {"CHIPS_URL": url, "CHIPS_TOKEN": made["token"], "PATH": f"{BIN}{os.pathsep}{path}"}
    follow("docs/harness-guide.md", {**env, **mine}, url)

    # The echo harness's answer, traced end to end by `chips trace`, from another directory
    # (it finds the run directory itself).
    harness = dict(line.split("=", 1) for line in (workdir / "scout.env").read_text().splitlines())
    lines = httpx.get(
        f"{url}/v1/spaces/{harness['CHIPS_SPACE_ID']}/messages",
        headers={"Authorization": f"Bearer {readme['CHIPS_TOKEN']}"},
        timeout=30,
    ).json()["messages"]
    echoes = [m for m in lines if m.get("text") == "You said: Find the PO"]
    expect(bool(echoes), f"the echo harness's answer is not in its room: {lines}")
    message_id = echoes[0]["id"]
    (asked,) = [m for m in lines if m["id"] == echoes[0]["reply_to"]]
    took = (
        datetime.fromisoformat(echoes[0]["ts"]) - datetime.fromisoformat(asked["ts"])
    ).total_seconds()
    print(f"the echo harness answered in {took:.1f} s", flush=True)
    expect(took < ANSWER_SECONDS, f"the echo harness took {took:.1f} s to answer")
    traced = ""
    for _ in range(60):
        done = subprocess.run(
            [chips, "trace", message_id],
            cwd=tempfile.gettempdir(),
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        traced = done.stdout + done.stderr
        if done.returncode == 0 and "incomplete" not in traced and "gateway.deliver" in traced:
            break
        time.sleep(0.5)
    print(f"$ chips trace {message_id}\n{traced.rstrip()}")
    expect("eventlog.commit" in traced and "gateway.deliver" in traced, "no whole trace")
    expect((run_dir / "traces.jsonl").exists(), "no trace file in the run directory")


def left_behind(pids: list[int], run_dir: Path, ports: list[int]) -> list[str]:
    found = [f"pid {p}" for p in pids if psutil.pid_exists(p) and not zombie(p)]
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if str(run_dir) in cmdline and proc.info["pid"] != os.getpid():
            found.append(f"pid {proc.info['pid']} ({cmdline[:80]})")
    # (A port may stay unbindable for a while, in TIME_WAIT; what matters is nobody listens.)
    found += [f"port {p} still answers" for p in ports if answers(p)]
    return found


def zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def main() -> int:
    started_at = time.monotonic()
    base = free_base()
    taken = set(range(base, base + SPAN))
    dead = {kind: dead_port(taken) for kind in ("nats", "redis", "s3", "postgres")}
    run_dir = Path(tempfile.mkdtemp(prefix="chips-smoke-"))
    env = {
        **os.environ,
        "CHIPS_PORT_BASE": str(base),
        "CHIPS_RUN_DIR": str(run_dir),
        "CHIPS_NATS_URL": f"nats://127.0.0.1:{dead['nats']}",
        "CHIPS_REDIS_URL": f"redis://127.0.0.1:{dead['redis']}/0",
        "CHIPS_S3_ENDPOINT_URL": f"http://127.0.0.1:{dead['s3']}",
        "CHIPS_DATABASE_URL": f"postgresql+psycopg://postgres@127.0.0.1:{dead['postgres']}/chips",
    }
    for name in ("CHIPS_URL", "CHIPS_TOKEN", "CHIPS_TRACE_FILE"):
        env.pop(name, None)
    print(f"smoke: CHIPS_PORT_BASE={base}, run directory {run_dir}, nothing at {dead}")
    failure = None
    pids: list[int] = []
    try:
        smoke(env, run_dir)
    except StepFailed as exc:
        failure = "a step of the page does not work as written: " + "\n".join(
            [str(exc), *getattr(exc, "__notes__", [])]
        )
    except (SmokeFailed, subprocess.TimeoutExpired, OSError, ValueError, KeyError) as exc:
        failure = f"{type(exc).__name__}: {exc}"
    finally:
        try:
            state = json.loads((run_dir / "state.json").read_text())
            pids = [int(e["pid"]) for e in state.get("started", {}).values()]
        except (OSError, ValueError):
            pass
        try:
            out = run(["make", "down"], env, timeout=120)
            if failure is None and "stopped" not in out:
                failure = "`make down` did not say what it stopped"
        except (SmokeFailed, subprocess.TimeoutExpired) as exc:
            failure = failure or str(exc)
    if failure is not None:
        for log in sorted((run_dir / "logs").glob("*.log")):
            tail = log.read_text(errors="replace").splitlines()[-15:]
            print(f"----- {log.name} -----\n" + "\n".join(tail))
    ports = [*range(base, base + SPAN), *dead.values()]
    left = left_behind(pids, run_dir, ports)
    if left and failure is None:
        failure = f"left behind after `make down`: {', '.join(left)}"
    status = subprocess.run(
        ["make", "status"], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    if failure is None and "nothing running" not in status.stdout:
        failure = f"`make status` after `make down` said {status.stdout!r}"
    took = time.monotonic() - started_at
    if failure is not None:
        print(f"smoke FAILED after {took:.0f} s: {failure}", file=sys.stderr)
        return 1
    print(f"smoke passed in {took:.0f} s: {len(pids)} processes started, none left")
    return 0


if __name__ == "__main__":
    sys.exit(main())
