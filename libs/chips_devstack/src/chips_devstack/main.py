"""``chips-dev up | down | status``: the whole system on this machine, in the background.

Infrastructure that already answers at the configured ``CHIPS_*`` URLs (NATS, Postgres,
Redis, an S3 endpoint) is used as it is; what does not answer is started from the packages
the project installs. Then the schema is migrated and every service starts as its own
process. ``CHIPS_PORT_BASE`` moves every port at once. State lives in the run directory
(``.run/`` of the checkout): what was started, logs, traces, and the data of whatever this
command started.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chips_common.config import Settings
from chips_common.local import LocalConfigError, local_ports, port_base, run_dir
from chips_devstack.procs import (
    SERVICES,
    Proc,
    ProcessExited,
    Started,
    answers,
    health,
    host_port,
    nats_proc,
    port_free,
    postgres_host_port,
    ready,
    redis_proc,
    s3_proc,
    service_proc,
    speaks,
    start_embedded_postgres,
    stop_all,
    wait_until,
    with_database,
)

READY_TIMEOUT = 180.0  # generous: a loaded machine takes its time to import a service


class UpFailed(Exception):
    """``make up`` cannot go on; the message is one sentence for the user."""


@dataclass
class State:
    """What ``up`` started and used, kept in ``<run dir>/state.json``."""

    started: dict[str, Started] = field(default_factory=dict)
    used: dict[str, str] = field(default_factory=dict)
    gateway: str = ""

    @classmethod
    def load(cls, path: Path) -> State:
        try:
            raw = json.loads(path.read_text())
            return cls(
                started={n: Started(**e) for n, e in raw.get("started", {}).items()},
                used=dict(raw.get("used", {})),
                gateway=str(raw.get("gateway", "")),
            )
        except (OSError, ValueError, TypeError):
            return cls()

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        body = {
            "started": {n: asdict(e) for n, e in self.started.items()},
            "used": self.used,
            "gateway": self.gateway,
        }
        path.write_text(json.dumps(body, indent=2))

    def running(self) -> dict[str, Started]:
        return {n: e for n, e in self.started.items() if e.alive()}


class Local:
    """The run directory and the ports of this checkout's stack."""

    def __init__(self) -> None:
        self.run = run_dir()
        self.logs = self.run / "logs"
        self.state_path = self.run / "state.json"
        self.ports = local_ports()
        self.moved = port_base() is not None

    @cached_property
    def settings(self) -> Settings:
        from chips_common.config import Settings  # slow to import; `down` does without

        return Settings()

    def url(self, kind: str) -> str:
        """The URL of one piece of infrastructure: CHIPS_*_URL when set, else its local port."""
        port = self.ports[kind]
        explicit = {
            "nats": ("CHIPS_NATS_URL", self.settings.nats_url),
            "redis": ("CHIPS_REDIS_URL", self.settings.redis_url),
            "s3": ("CHIPS_S3_ENDPOINT_URL", self.settings.s3_endpoint_url),
            "postgres": ("CHIPS_DATABASE_URL", self.settings.database_url),
        }[kind]
        if explicit[0] in os.environ or not self.moved:
            return explicit[1]
        return {
            "nats": f"nats://127.0.0.1:{port}",
            "redis": f"redis://127.0.0.1:{port}/0",
            "s3": f"http://127.0.0.1:{port}",
            "postgres": f"postgresql+psycopg://postgres@127.0.0.1:{port}/chips",
        }[kind]


NAMES = {"nats": "NATS", "redis": "Redis", "s3": "S3 endpoint", "postgres": "Postgres"}


def start_infrastructure(local: Local, state: State) -> dict[str, str]:
    """Use what answers, start what does not; the environment the services need."""
    env: dict[str, str] = {}
    daemons: dict[str, tuple[str, Callable[[int], Proc]]] = {
        "nats": ("CHIPS_NATS_URL", lambda p: nats_proc(p, local.run / "nats", local.logs)),
        "redis": ("CHIPS_REDIS_URL", lambda p: redis_proc(p, local.logs)),
        "s3": ("CHIPS_S3_ENDPOINT_URL", lambda p: s3_proc(p, local.logs)),
    }
    starting: list[tuple[str, str, Proc]] = []
    for kind, (variable, make) in daemons.items():
        url = local.url(kind)
        host, port = host_port(url, local.ports[kind])
        env[variable] = url
        if kind in state.started and state.started[kind].alive():
            print(f"the {NAMES[kind]} started earlier is still running at {url}")
            continue
        if answers(host, port):
            if not speaks(kind, host, port):
                raise UpFailed(
                    f"port {port} answers, but not as {NAMES[kind]} ({variable}={url}); "
                    "point it elsewhere or move the stack with CHIPS_PORT_BASE"
                )
            state.used[kind] = url
            print(f"using the {NAMES[kind]} at {url}")
            continue
        if host not in ("127.0.0.1", "localhost"):
            raise UpFailed(f"nothing answers at {variable}={url}, and it is not on this machine")
        proc = make(port).start()
        state.started[kind] = Started.of(kind, proc.pid)
        state.save(local.state_path)
        starting.append((kind, url, proc))
    # They start together; then wait for each.
    for kind, url, proc in starting:
        host, port = host_port(url, local.ports[kind])
        try:
            wait_until(partial(answers, host, port), READY_TIMEOUT, NAMES[kind], gone=proc)
        except (ProcessExited, TimeoutError) as exc:
            raise UpFailed(f"{exc}; see {proc.log_path}") from None
        print(f"started {NAMES[kind]} at {url} (pid {proc.pid})")

    url = local.url("postgres")
    where = postgres_host_port(url)
    embedded = state.started.get("postgres")
    if embedded is not None and embedded.alive() and "postgres_url" in state.used:
        env["CHIPS_DATABASE_URL"] = state.used["postgres_url"]
        print("the Postgres started earlier (embedded-postgres) is still running")
    elif where is None or answers(*where):
        if where is not None and not speaks("postgres", *where):
            raise UpFailed(
                f"port {where[1]} answers, but not as Postgres (CHIPS_DATABASE_URL={url}); "
                "point it elsewhere or move the stack with CHIPS_PORT_BASE"
            )
        env["CHIPS_DATABASE_URL"] = url
        state.used["postgres"] = url
        print(f"using the Postgres at {url}")
    else:
        from sqlalchemy.engine import make_url

        try:
            server = start_embedded_postgres(local.run / "postgres")
        except Exception as exc:  # its own errors are many and unhelpful; its log says why
            raise UpFailed(
                f"nothing answered at {url}, and the embedded Postgres did not start "
                f"({type(exc).__name__}); see {local.run / 'postgres' / 'log'}"
            ) from None

        env["CHIPS_DATABASE_URL"] = with_database(server.url, make_url(url).database or "chips")
        state.started["postgres"] = server.postmaster
        state.used["postgres_url"] = env["CHIPS_DATABASE_URL"]
        state.save(local.state_path)
        print(
            f"started Postgres (embedded-postgres) in {server.data_dir}, on a Unix socket "
            f"(pid {server.postmaster.pid}): nothing answered at {url}"
        )
    return env


def check_service_ports(local: Local) -> None:
    host = local.settings.host
    for name in SERVICES:
        port = local.ports[name]
        if not port_free(host, port):
            hint = (
                "another CHIPS_PORT_BASE"
                if local.moved
                else "CHIPS_PORT_BASE (see docs/configuration.md)"
            )
            raise UpFailed(
                f"port {port} ({name}) is already taken by another process; "
                f"stop it or move the whole stack with {hint}"
            )


def migrate(local: Local, env: dict[str, str]) -> None:
    local.logs.mkdir(parents=True, exist_ok=True)
    log = local.logs / "migrate.log"
    with log.open("wb") as out:
        done = subprocess.run(
            [sys.executable, "-m", "chips_common.db.migrate"],
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    if done.returncode != 0:
        lines = log.read_text(errors="replace").strip().splitlines()
        raise UpFailed(f"the migration failed: {lines[-1] if lines else '?'} (see {log})")


def start_services(local: Local, state: State, env: dict[str, str]) -> None:
    procs: dict[str, Proc] = {}
    # The gateway passes uploads and fetches on to the attachments service (ADR 0043).
    env = {"CHIPS_ATTACHMENTS_URL": f"http://127.0.0.1:{local.ports['attachments']}", **env}
    for name in SERVICES:
        port = local.ports[name]
        procs[name] = service_proc(name, port, env, local.logs).start()
        state.started[name] = Started.of(name, procs[name].pid)
    state.save(local.state_path)
    deadline = time.monotonic() + READY_TIMEOUT
    waiting = dict(procs)
    while waiting:
        for name, proc in list(waiting.items()):
            if ready(f"http://127.0.0.1:{local.ports[name]}"):
                del waiting[name]
            elif not proc.alive():
                stop_services(local, state)
                raise UpFailed(
                    f"{name} exited during start-up (exit code {proc.popen and proc.popen.poll()})"
                    f"; the end of {proc.log_path}:\n{proc.tail(15)}"
                )
        if waiting and time.monotonic() > deadline:
            stop_services(local, state)
            name, proc = next(iter(waiting.items()))
            raise UpFailed(
                f"{name} was not ready after {READY_TIMEOUT:.0f} s; "
                f"the end of {proc.log_path}:\n{proc.tail(15)}"
            )
        time.sleep(0.1)


def stop_services(local: Local, state: State) -> None:
    stop_all([state.started[n] for n in SERVICES if n in state.started])
    for name in SERVICES:
        state.started.pop(name, None)
    state.save(local.state_path)


def unbuilt(local: Local) -> dict[str, str]:
    """The services that run but say their work is not built yet, and what they say."""
    found: dict[str, str] = {}
    for name in SERVICES:
        work = health(f"http://127.0.0.1:{local.ports[name]}").get("work")
        if isinstance(work, str) and work.startswith("not built"):
            found[name] = work
    return found


def up() -> int:
    local = Local()
    state = State.load(local.state_path)
    running = state.running()
    if all(name in running for name in SERVICES):
        print(f"Chips is already up here: the gateway listens on {state.gateway}")
        print("(`make status` lists what runs, `make down` stops it)")
        return 0
    if any(name in running for name in SERVICES):
        gone = [n for n in SERVICES if n not in running]
        print(f"starting the services again ({', '.join(gone)} had stopped)")
        stop_services(local, state)
    state.started = state.running()
    state.used = {k: v for k, v in state.used.items() if k == "postgres_url"}
    try:
        check_service_ports(local)
        env = start_infrastructure(local, state)
        env["CHIPS_TRACE_FILE"] = os.environ.get(
            "CHIPS_TRACE_FILE", str(local.run / "traces.jsonl")
        )
        # The gateway passes uploads to the attachments service, wherever the base put it.
        env["CHIPS_ATTACHMENTS_URL"] = os.environ.get(
            "CHIPS_ATTACHMENTS_URL", f"http://127.0.0.1:{local.ports['attachments']}"
        )
        migrate(local, env)
        start_services(local, state, env)
    except UpFailed as exc:
        state.save(local.state_path)
        print(f"chips-dev: {exc}", file=sys.stderr)
        if state.running():
            print("(`make down` stops what was started)", file=sys.stderr)
        return 1
    state.gateway = local.settings.public_url or f"http://127.0.0.1:{local.ports['gateway']}"
    state.save(local.state_path)
    for name, work in unbuilt(local).items():
        print(f"{name} runs, but its work is {work}")
    print(f"Chips is up: the gateway listens on {state.gateway}  (logs in {local.logs})")
    if local.moved and "CHIPS_URL" not in os.environ:
        print(f"(`chips` and the SDK find it while CHIPS_PORT_BASE={port_base()} is set)")
    return 0


def down() -> int:
    local = Local()
    state = State.load(local.state_path)
    running = state.running()
    if not running:
        local.state_path.unlink(missing_ok=True)
        print("nothing running: nothing started here to stop")
        return 0
    took = time.monotonic()
    # The services first, all at once; then the infrastructure they lean on.
    services = [running[n] for n in SERVICES if n in running]
    infra = [e for n, e in running.items() if n not in SERVICES]
    killed = stop_all(services) + stop_all(infra)
    names = [e.name for e in services + infra]
    print(f"stopped {', '.join(names)} in {time.monotonic() - took:.1f} s")
    if killed:
        print(f"({', '.join(killed)} did not stop when asked and were killed)")
    local.state_path.unlink(missing_ok=True)
    return 0


def status() -> int:
    local = Local()
    state = State.load(local.state_path)
    running = state.running()
    if not running:
        print("nothing running")
        return 0
    unbuilt_work = unbuilt(local) if any(n in running for n in SERVICES) else {}
    for name, entry in state.started.items():
        line = f"{name:12} pid {entry.pid:<8} {'running' if name in running else 'gone'}"
        if name in SERVICES:
            line += f"  port {local.ports[name]}"
        if name in unbuilt_work:
            line += f"  (work {unbuilt_work[name]})"
        print(line)
    for kind, url in state.used.items():
        if kind in NAMES:
            print(f"{kind:12} using {url}")
    if state.gateway and "gateway" in running:
        print(f"the gateway listens on {state.gateway}")
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="chips-dev", description=__doc__)
    parser.add_argument("command", choices=["up", "down", "status"])
    args = parser.parse_args()
    try:
        code = {"up": up, "down": down, "status": status}[args.command]()
    except LocalConfigError as exc:
        print(f"chips-dev: {exc}", file=sys.stderr)
        code = 2
    sys.exit(code)


if __name__ == "__main__":
    main()
