"""The bare-machine smoke: `make up` where nothing answers, the README's steps, `make down`.

Every infrastructure URL points at a port where nothing listens and CHIPS_PORT_BASE moves
the services to a free range, so `make up` must start NATS, Redis, an S3 endpoint and an
embedded Postgres itself, as on a machine that runs none of them, and collide with nothing
the machine runs. Then, as a new user would (README, "Trying it"): a workspace, a person,
a harness that opens the socket and subscribes, a post it hears as `message.new`, and
`chips trace` of that message. Then `make down`, and a check that no process it started is
left. Run by .ci/run; exits non-zero, saying why, on any failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
import websockets

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
SPAN = 10  # ports a stack takes from its base


class SmokeFailed(Exception):
    pass


def free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    with socket.socket() as s:
        s.settimeout(0.3)
        return s.connect_ex(("127.0.0.1", port)) != 0


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


async def harness_hears(url: str, token: str, post: Any) -> dict[str, Any]:
    """The README's harness: open the socket, hello, subscribe; then the post, and wait."""
    ws_url = url.replace("http", "ws", 1) + "/v1/ws"
    headers = {"Authorization": f"Bearer {token}"}
    async with websockets.connect(ws_url, additional_headers=headers) as ws:
        await ws.send(json.dumps({"frame": "hello", "protocol": {"min": 1, "max": 1}}))
        hello = json.loads(await asyncio.wait_for(ws.recv(), 10))
        expect(hello.get("frame") == "hello", f"the harness's hello was answered {hello}")
        # Subscribing from the workspace's head: everything after it comes, nothing is missed.
        await ws.send(json.dumps({"frame": "subscribe", "workspace_id": hello["workspace_id"]}))
        await ws.send(json.dumps({"frame": "subscribe", "workspace_id": hello["workspace_id"]}))
        while True:  # the second subscribe is refused once the first is in place
            frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if frame.get("frame") == "error" and "subscribed already" in frame["message"]:
                break
        seq = await asyncio.to_thread(post)
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), 20))
            event = frame.get("event", {})
            if frame.get("frame") == "event" and event.get("seq") == seq:
                return dict(event)


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

    # README, "Trying it".
    made = json.loads(
        run([chips, "workspace", "create", "--name", "Acme", "--owner", "Arjun"], env)
    )
    person_env = {**env, "CHIPS_TOKEN": made["token"]}
    run([chips, "person", "add", "--name", "Maya Chen"], person_env)
    lines = run([chips, "connect", "custom", "--name", "Scout", "--no-dial"], person_env)
    harness = dict(line.split("=", 1) for line in lines.splitlines() if line.startswith("CHIPS_"))
    run([chips, "declare", "Scout", "new_spaces", "follows_rooms"], person_env)

    url = harness["CHIPS_URL"]

    def post() -> int:
        answer = httpx.post(
            f"{url}/v1/events",
            headers={"Authorization": f"Bearer {made['token']}"},
            json={
                "type": "message.post",
                "space_id": harness["CHIPS_SPACE_ID"],
                "text": "Find the PO",
                "idempotency_key": "m-1",
            },
            timeout=30,
        )
        expect(answer.status_code == 200, f"the post was answered {answer.text}")
        return int(answer.json()["seq"])

    heard = asyncio.run(harness_hears(url, harness["CHIPS_HARNESS_TOKEN"], post))
    print(f"the harness heard {heard['type']} {heard['message_id']}: {heard['text']!r}")
    expect(heard["type"] == "message.new", f"the harness heard {heard['type']}")

    # `chips trace`, from another directory: it finds the run directory itself.
    traced = ""
    for _ in range(60):
        done = subprocess.run(
            [chips, "trace", heard["message_id"]],
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
    print(f"$ chips trace {heard['message_id']}\n{traced.rstrip()}")
    expect("eventlog.commit" in traced and "gateway.deliver" in traced, "no whole trace")
    expect((run_dir / "traces.jsonl").exists(), "no trace file in the run directory")


def left_behind(pids: list[int], run_dir: Path, ports: list[int]) -> list[str]:
    found = [f"pid {p}" for p in pids if psutil.pid_exists(p) and not zombie(p)]
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if str(run_dir) in cmdline and proc.info["pid"] != os.getpid():
            found.append(f"pid {proc.info['pid']} ({cmdline[:80]})")
    found += [f"port {p} still answers" for p in ports if not free(p)]
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
