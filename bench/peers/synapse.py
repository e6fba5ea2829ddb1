"""The peer: Matrix Synapse on Postgres, measured by the same phases as bench/fastpath.py.

What a team would run instead of Chips, on the same machine at the same moment. Installs
``matrix-synapse`` from the package index into a venv of its own (``--venv``, kept
between runs), makes a database of its own on the Postgres of the benches (C collation,
as Synapse asks), writes a homeserver config listening on 127.0.0.1 only with its rate
limits lifted, registers two users, opens a room for them and measures:

  seq     one ``PUT /rooms/{room}/send/m.room.message/{txn}`` at a time: p50, p99, msg/s
  http8   eight of those in flight (eight kept-alive connections, one user)
  seen    one user sends, the other's ``/sync`` long poll returns it: p50, p99 of the
          send to the other user having it, one in flight

with the CPU Synapse and Postgres spent per message. The client is bench/lean.py's, as
fastpath's. Bounded in count and time; stops Synapse and drops its database on the way
out; writes bench/results/<label>synapse.json.

    .venv/bin/python bench/peers/synapse.py [--count 300] [--label rt-]
        [--venv ~/.cache/chips-bench/synapse]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastpath import commit, cpu_seconds, machine, postgres_cpu, summary
from lean import LeanHttp

from chips_common.db.scratch import plain_url
from chips_devstack.procs import answers, free_port, wait_until

RESULTS = Path(__file__).resolve().parents[1] / "results"
ADMIN = os.environ.get(
    "CHIPS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
VENV = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "chips-bench/synapse"
_txn = itertools.count(1)

CONFIG = """\
server_name: "bench.local"
pid_file: "{root}/homeserver.pid"
listeners:
  - port: {port}
    bind_addresses: ["127.0.0.1"]
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]
        compress: false
database:
  name: psycopg2
  args:
    user: {user}
    host: 127.0.0.1
    port: {pgport}
    database: {db}
    cp_min: 5
    cp_max: 10
log_config: "{root}/log.yaml"
media_store_path: "{root}/media"
signing_key_path: "{root}/signing.key"
report_stats: false
enable_registration: true
enable_registration_without_verification: true
registration_shared_secret: "bench"
macaroon_secret_key: "bench-macaroon"
form_secret: "bench-form"
trusted_key_servers: []
suppress_key_server_warning: true
presence:
  enabled: false
url_preview_enabled: false
enable_metrics: false
rc_message: {{per_second: 1000000, burst_count: 1000000}}
rc_registration: {{per_second: 1000, burst_count: 1000}}
rc_login:
  address: {{per_second: 1000, burst_count: 1000}}
  account: {{per_second: 1000, burst_count: 1000}}
  failed_attempts: {{per_second: 1000, burst_count: 1000}}
rc_joins:
  local: {{per_second: 1000, burst_count: 1000}}
  remote: {{per_second: 1000, burst_count: 1000}}
"""

LOG = """\
version: 1
formatters:
  precise: {format: '%(asctime)s - %(name)s - %(levelname)s - %(message)s'}
handlers:
  file: {class: logging.FileHandler, formatter: precise, filename: "ROOT/homeserver.log"}
root: {level: WARNING, handlers: [file]}
disable_existing_loggers: false
"""


def ensure_venv(venv: Path) -> Path:
    """The venv's python, with matrix-synapse installed (once; kept for later runs)."""
    python = venv / "bin/python"
    probe = [str(python), "-c", "import synapse, psycopg2"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    print(f"installing matrix-synapse into {venv} (once)", flush=True)
    subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "matrix-synapse", "psycopg2-binary"],
        check=True,
        timeout=900,
    )
    return python


class Client:
    """A user's kept-alive connections to the client API."""

    def __init__(self, base: str, token: str) -> None:
        self.base, self.token = base, token
        self.headers = {"authorization": f"Bearer {token}"}

    async def open(self) -> LeanHttp:
        return await LeanHttp.open(self.base)

    @staticmethod
    async def call(
        http: LeanHttp, method: str, path: str, body: Any, headers: dict[str, str]
    ) -> Any:
        status, answer = await http.request(method, path, body, headers)
        if status != 200:
            raise RuntimeError(f"{method} {path}: {status} {answer[:300]!r}")
        return orjson.loads(answer)


async def register(base: str, name: str) -> Client:
    http = await LeanHttp.open(base)
    body = {"username": name, "password": "bench-password-1", "auth": {"type": "m.login.dummy"}}
    answer = await Client.call(http, "POST", "/_matrix/client/v3/register", body, {})
    await http.close()
    return Client(base, answer["access_token"])


async def send(http: LeanHttp, me: Client, room: str, text: str) -> str:
    path = f"/_matrix/client/v3/rooms/{room}/send/m.room.message/t{next(_txn)}"
    answer = await Client.call(http, "PUT", path, {"msgtype": "m.text", "body": text}, me.headers)
    return str(answer["event_id"])


async def closed_loop(me: Client, room: str, count: int, inflight: int, cap: float) -> Any:
    conns = [await me.open() for _ in range(inflight)]
    for i in range(20):  # warm
        await send(conns[0], me, room, f"warm {i}")
    latencies: list[float] = []
    left = iter(range(count))
    started = time.perf_counter()

    async def worker(http: LeanHttp) -> None:
        for i in left:
            t = time.perf_counter()
            await send(http, me, room, f"bench {i}")
            latencies.append(time.perf_counter() - t)
            if time.perf_counter() - started > cap:
                return

    await asyncio.gather(*(worker(c) for c in conns))
    elapsed = time.perf_counter() - started
    for c in conns:
        await c.close()
    return {"seconds": round(elapsed, 2), "per_second": round(len(latencies) / elapsed, 1)} | (
        summary(latencies)
    )


async def seen(alice: Client, bob: Client, room: str, count: int, cap: float) -> Any:
    """Alice sends; Bob's /sync long poll returns it. One in flight."""
    poll = await bob.open()
    first = await Client.call(poll, "GET", "/_matrix/client/v3/sync?timeout=0", None, bob.headers)
    since = first["next_batch"]
    arrived: dict[str, float] = {}
    waiting: dict[str, asyncio.Future[float]] = {}
    stop = asyncio.Event()

    async def syncing() -> None:
        nonlocal since
        while not stop.is_set():
            path = f"/_matrix/client/v3/sync?timeout=5000&since={since}"
            answer = await Client.call(poll, "GET", path, None, bob.headers)
            now = time.perf_counter()
            since = answer["next_batch"]
            joined = answer.get("rooms", {}).get("join", {}).get(room, {})
            for event in joined.get("timeline", {}).get("events", []):
                text = event.get("content", {}).get("body", "")
                arrived[text] = now
                future = waiting.pop(text, None)
                if future is not None and not future.done():
                    future.set_result(now)

    reader = asyncio.create_task(syncing())
    http = await alice.open()
    latencies: list[float] = []
    lost = 0
    started = time.perf_counter()
    for i in range(count):
        text = f"seen {i}"
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        waiting[text] = future
        t = time.perf_counter()
        await send(http, alice, room, text)
        try:
            latencies.append(await asyncio.wait_for(future, 10) - t)
        except TimeoutError:
            lost += 1
        if time.perf_counter() - started > cap:
            break
    stop.set()
    reader.cancel()
    await http.close()
    elapsed = time.perf_counter() - started
    return {"seconds": round(elapsed, 2), "lost": lost} | summary(latencies)


async def run(base: str, pid: int, count: int) -> dict[str, Any]:
    alice, bob = await register(base, "alice"), await register(base, "bob")
    http = await alice.open()
    room = (
        await Client.call(
            http, "POST", "/_matrix/client/v3/createRoom", {"preset": "private_chat"}, alice.headers
        )
    )["room_id"]
    await Client.call(
        http,
        "POST",
        f"/_matrix/client/v3/rooms/{room}/invite",
        {"user_id": "@bob:bench.local"},
        alice.headers,
    )
    await http.close()
    http = await bob.open()
    await Client.call(http, "POST", f"/_matrix/client/v3/rooms/{room}/join", {}, bob.headers)
    await http.close()
    plans = {
        "seq": lambda: closed_loop(alice, room, count, 1, 60),
        "http8": lambda: closed_loop(alice, room, count * 3, 8, 60),
        "seen": lambda: seen(alice, bob, room, count // 2, 60),
    }
    out: dict[str, Any] = {}
    for name, plan in plans.items():
        cpu0, pg0 = cpu_seconds(pid), postgres_cpu()
        figures = await plan()
        n = max(1, figures["count"])
        figures["cpu_ms_per_message"] = {
            "synapse": round((cpu_seconds(pid) - cpu0) / n * 1000, 3),
            "postgres (whole machine)": round((postgres_cpu() - pg0) / n * 1000, 3),
        }
        print(json.dumps({"synapse": name, **figures}), flush=True)
        out[name] = figures
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300, help="sequential sends")
    parser.add_argument("--label", default="")
    parser.add_argument("--venv", type=Path, default=VENV)
    args = parser.parse_args()
    import psycopg

    python = ensure_venv(args.venv)
    root = Path(tempfile.mkdtemp(prefix="chips-synapse-"))
    port = free_port()
    admin = plain_url(ADMIN)
    name = f"chips_synapse_{os.getpid()}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(
            f"CREATE DATABASE \"{name}\" ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'"
            " TEMPLATE template0"
        )
    info = psycopg.conninfo.conninfo_to_dict(admin)
    (root / "homeserver.yaml").write_text(
        CONFIG.format(
            root=root,
            port=port,
            user=info.get("user", "postgres"),
            pgport=info.get("port", 5432),
            db=name,
        )
    )
    (root / "log.yaml").write_text(LOG.replace("ROOT", str(root)))
    config = ["-c", str(root / "homeserver.yaml")]
    hs = [str(python), "-m", "synapse.app.homeserver", *config]
    subprocess.run([*hs, "--generate-keys"], check=True, capture_output=True)
    with (root / "stderr").open("wb") as stderr:
        proc = subprocess.Popen(hs, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        wait_until(lambda: answers("127.0.0.1", port), 120, "Synapse")
        load_before = os.getloadavg()
        figures = asyncio.run(run(f"http://127.0.0.1:{port}", proc.pid, args.count))
        result = {
            "benchmark": "peers.synapse",
            "synapse": subprocess.run(
                [str(python), "-c", "import synapse; print(synapse.__version__)"],
                capture_output=True,
                text=True,
            ).stdout.strip(),
            **figures,
            "machine": machine(),
            "commit": commit(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"{args.label}synapse.json").write_text(json.dumps(result, indent=2) + "\n")
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
