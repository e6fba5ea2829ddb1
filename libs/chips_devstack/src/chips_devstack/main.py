"""``chips-dev up | down | status``: the whole system on this machine, in the background.

Infrastructure the machine already runs (NATS, Postgres, Redis, an S3 endpoint at the
configured ``CHIPS_*`` URLs) is used as it is; what does not answer is started from the
packages the project installs. Then the schema is migrated and every service starts as
its own process. State lives in ``.run/``: pid files, logs, and the data of whatever
this command started.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from chips_common.config import Settings
from chips_devstack.procs import (
    SERVICES,
    Proc,
    answers,
    embedded_postgres_url,
    host_port,
    nats_proc,
    ready,
    redis_proc,
    s3_proc,
    service_proc,
    stop_pid,
    wait_until,
)

RUN = Path(os.environ.get("CHIPS_RUN_DIR", ".run")).resolve()
LOGS = RUN / "logs"
PIDS = RUN / "pids.json"


def load_pids() -> dict[str, int]:
    try:
        return {k: int(v) for k, v in json.loads(PIDS.read_text()).items()}
    except (OSError, ValueError):
        return {}


def save_pids(pids: dict[str, int]) -> None:
    RUN.mkdir(parents=True, exist_ok=True)
    PIDS.write_text(json.dumps(pids, indent=2))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def start_infrastructure(settings: Settings, pids: dict[str, int]) -> dict[str, str]:
    """Start what does not answer; return the environment the services need."""
    env: dict[str, str] = {}
    # What runs as a process of ours when nothing answers: name, URL, default port, process.
    daemons: list[tuple[str, str, int, Callable[[int], Proc]]] = [
        ("NATS", settings.nats_url, 4222, lambda port: nats_proc(port, RUN / "nats", LOGS)),
        ("Redis", settings.redis_url, 6379, lambda port: redis_proc(port, LOGS)),
        ("S3 endpoint", settings.s3_endpoint_url, 9000, lambda port: s3_proc(port, LOGS)),
    ]
    for name, url, default_port, make in daemons:
        host, port = host_port(url, default_port)
        if answers(host, port):
            print(f"using the {name} at {url}")
            continue
        proc = make(port).start()
        pids[proc.name] = proc.pid
        wait_until(lambda h=host, p=port: answers(h, p), 30, name)
        print(f"started the {name} on {host}:{port}")

    host, port = host_port(settings.database_url, 5432)
    if not answers(host, port):
        url = embedded_postgres_url(RUN / "postgres")
        env["CHIPS_DATABASE_URL"] = url.rsplit("/", 1)[0] + "/chips"
        print("started Postgres from the embedded-postgres package")
    else:
        print(f"using the Postgres at {host}:{port}")
    return env


def up() -> int:
    pids = load_pids()
    running = [name for name, pid in pids.items() if alive(pid)]
    if any(name in SERVICES for name in running):
        print("Chips is already running here; `make down` first to restart it.")
        return 1
    pids = {name: pid for name, pid in pids.items() if alive(pid)}
    settings = Settings()
    env = start_infrastructure(settings, pids)
    # Spans go to a file that `chips trace` reads (and to OTLP when that is configured).
    env.setdefault(
        "CHIPS_TRACE_FILE", os.environ.get("CHIPS_TRACE_FILE", str(RUN / "traces.jsonl"))
    )
    save_pids(pids)
    subprocess.run(
        [sys.executable, "-m", "chips_common.db.migrate"], env={**os.environ, **env}, check=True
    )
    procs = []
    for name, port in SERVICES.items():
        proc = service_proc(name, port, env, LOGS).start()
        pids[name] = proc.pid
        procs.append((proc, port))
    save_pids(pids)
    for proc, port in procs:
        try:
            wait_until(lambda p=port: ready(f"http://127.0.0.1:{p}"), 60, proc.name)
        except TimeoutError as exc:
            print(f"{exc}; its log says:\n{proc.tail()}", file=sys.stderr)
            return 1
    gateway = settings.public_url or f"http://127.0.0.1:{SERVICES['gateway']}"
    print(f"Chips is up. The gateway listens on {gateway}  (logs in {LOGS})")
    return 0


def down() -> int:
    pids = load_pids()
    if not pids:
        print("nothing started here is running")
        return 0
    # Services first, then the infrastructure they lean on.
    order = [n for n in SERVICES if n in pids] + [n for n in pids if n not in SERVICES]
    for name in order:
        stop_pid(pids[name])
        print(f"stopped {name}")
    PIDS.unlink(missing_ok=True)
    return 0


def status() -> int:
    pids = load_pids()
    for name, pid in pids.items():
        print(f"{name:12} pid {pid:<8} {'running' if alive(pid) else 'gone'}")
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="chips-dev", description=__doc__)
    parser.add_argument("command", choices=["up", "down", "status"])
    args = parser.parse_args()
    sys.exit({"up": up, "down": down, "status": status}[args.command]())


if __name__ == "__main__":
    main()
