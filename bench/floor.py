"""The floor: what the fixed stack itself costs per hop on this machine, with none of Chips.

The append path's targets (issue 10, docs/performance.md; the rounds in bench/HISTORY.md) are
figures for the whole of Chips. This script measures how close the pieces the design fixes can come
on the same machine when they do almost nothing: uvicorn and FastAPI, nats-py and JetStream,
SQLAlchemy 2 on psycopg 3 and Postgres. Each stage adds one hop to the one before, so
the difference between two stages is that hop's least cost:

  http      an empty POST answered by FastAPI on uvicorn (uvloop, httptools), as the
            gateway runs it
  pg        the same, plus one prepared SELECT of a principal by token hash (what the
            gateway asks per request) on an autocommit engine
  request   the same, plus a core NATS request to a second process that answers at once
  commit    the same, but the second process inserts the request as one row (one
            autocommit statement whose commit waits for the disk) before answering
  append    the append path's shape: the request published to a JetStream stream with a
            reply subject in a header; the second process pulls it (a batch at a time),
            inserts the batch's rows in one statement, publishes each committed row to a
            second stream without waiting for its store ack, answers and acks each
            request; the gateway's handler returns when the answer comes

  *-direct  pg and append with psycopg alone where SQLAlchemy was (the same statements,
            autocommit connections of their own)

No door, no spans, no events catalogue, no consumers of the second stream, no sockets to
deliver to. Each stage is measured closed loop from a lean HTTP client (bench/lean.py,
which bench/fastpath.py uses) one request at a time (p50, p99, requests a second, and the CPU
each process spent per request) and, for ``append``, with 8 in flight; ``append-direct``
also with 128 in flight, the floor of fastpath's ``pipe`` (16 sockets x 8 pipelined).
``--stages append-direct:1,append-direct:8`` measures those stages alone.

Starts its own nats-server and a database of its own on 127.0.0.1, bounded in count and
time, and writes bench/results/<label>floor.json.

    .venv/bin/python bench/floor.py [--count 1000] [--label s25-] [--stages path:n,...]
"""

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parents[1]
ADMIN = os.environ.get(
    "CHIPS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
APPEND_STREAM, EVENTS_STREAM = "FLOOR_APPEND", "FLOOR_EVENTS"
SETUP = [
    "CREATE TABLE principals (token_hash text PRIMARY KEY, id text, workspace_id text,"
    " kind text, name text)",
    "INSERT INTO principals VALUES ('h', 'usr_1', 'ws_1', 'person', 'Arjun')",
    "CREATE TABLE log (workspace_id text, seq bigserial, id text, body jsonb,"
    " PRIMARY KEY (workspace_id, seq))",
]


# -- the two processes ------------------------------------------------------------------


def gateway(port: int, nats_url: str, db_url: str) -> None:
    """A bare gateway: the stages' endpoints, nothing else."""
    import uuid

    import nats
    import orjson
    import psycopg
    import uvicorn
    from fastapi import FastAPI, Request
    from fastapi.responses import Response
    from psycopg.rows import namedtuple_row
    from pydantic import BaseModel
    from sqlalchemy import bindparam, text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(db_url, pool_pre_ping=False).execution_options(
        isolation_level="AUTOCOMMIT"
    )
    who = text(
        "SELECT id, workspace_id, kind, name FROM principals WHERE token_hash = :h"
    ).bindparams(bindparam("h"))
    state: dict[str, Any] = {}
    plain = db_url.replace("postgresql+psycopg://", "postgresql://", 1)

    class Post(BaseModel):
        type: str
        space_id: str
        text: str
        idempotency_key: str

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await connect()
        yield

    async def connect() -> None:
        nc = await nats.connect(nats_url)
        state["nc"] = nc
        inbox = nc.new_inbox()
        waiting: dict[str, asyncio.Future[bytes]] = {}

        async def answered(msg: Any) -> None:
            future = waiting.pop(msg.subject.rsplit(".", 1)[1], None)
            if future is not None and not future.done():
                future.set_result(msg.data)

        await nc.subscribe(f"{inbox}.*", cb=answered)
        state["inbox"], state["waiting"] = inbox, waiting

    app = FastAPI(openapi_url=None, lifespan=lifespan)

    async def principal() -> Any:
        async with engine.connect() as conn:
            return (await conn.execute(who, {"h": "h"})).one()

    # The same statement on psycopg alone: a few autocommit connections, no pool library.
    direct: asyncio.LifoQueue[psycopg.AsyncConnection[Any]] = asyncio.LifoQueue()
    who_direct = "SELECT id, workspace_id, kind, name FROM principals WHERE token_hash = %(h)s"

    async def principal_direct() -> Any:
        if direct.empty():
            conn = await psycopg.AsyncConnection.connect(
                plain, autocommit=True, prepare_threshold=0, row_factory=namedtuple_row
            )
        else:
            conn = direct.get_nowait()
        try:
            cursor = await conn.execute(who_direct, {"h": "h"})
            return await cursor.fetchone()
        finally:
            direct.put_nowait(conn)

    @app.post("/http")
    async def bare(request: Request) -> Response:
        Post.model_validate_json(await request.body())
        return Response(b"{}", media_type="application/json")

    @app.post("/pg")
    async def pg(request: Request) -> Response:
        Post.model_validate_json(await request.body())
        await principal()
        return Response(b"{}", media_type="application/json")

    async def ask(subject: str, body: bytes, stored: bool) -> bytes:
        nc = state["nc"]
        token = uuid.uuid4().hex
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        state["waiting"][token] = future
        reply = f"{state['inbox']}.{token}"
        if stored:  # a JetStream publish; the answer comes from the log, not the stream
            await nc.publish(subject, body, reply=nc.new_inbox(), headers={"Floor-Reply": reply})
        else:
            await nc.publish(subject, body, reply=reply)
        return await asyncio.wait_for(future, 5)

    async def forward(request: Request, subject: str, stored: bool, direct: bool) -> Response:
        """Parse the post, ask who sent it, and hand it on to the log process."""
        post = Post.model_validate_json(await request.body())
        who_ = await (principal_direct() if direct else principal())
        fields = {"ws": who_.workspace_id, "post": post.model_dump()}
        if direct:
            fields["direct"] = 1
        answer = await ask(subject, orjson.dumps(fields), stored)
        return Response(answer, media_type="application/json")

    @app.post("/request")
    async def request_(request: Request) -> Response:
        return await forward(request, "floor.echo", stored=False, direct=False)

    @app.post("/commit")
    async def commit(request: Request) -> Response:
        return await forward(request, "floor.commit", stored=False, direct=False)

    @app.post("/append")
    async def append(request: Request) -> Response:
        return await forward(request, "floor.append.ws_1", stored=True, direct=False)

    @app.post("/pg-direct")
    async def pg_direct(request: Request) -> Response:
        Post.model_validate_json(await request.body())
        await principal_direct()
        return Response(b"{}", media_type="application/json")

    @app.post("/append-direct")
    async def append_direct(request: Request) -> Response:
        return await forward(request, "floor.append.ws_1", stored=True, direct=True)

    uvicorn.run(
        app, host="127.0.0.1", port=port, loop="uvloop", http="httptools", log_level="warning"
    )


def log_process(nats_url: str, db_url: str) -> None:
    """A bare log: answers requests, commits them, or appends them as the eventlog does."""
    import nats
    import orjson
    import psycopg
    import uvloop
    from nats.js.api import AckPolicy, ConsumerConfig
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    insert = text(
        "INSERT INTO log (workspace_id, id, body) SELECT r.ws, r.id, r.body"
        " FROM jsonb_to_recordset(CAST(:rows AS jsonb)) AS r(ws text, id text, body jsonb)"
        " RETURNING seq"
    )

    async def main() -> None:
        engine = create_async_engine(db_url, pool_pre_ping=False).execution_options(
            isolation_level="AUTOCOMMIT"
        )
        nc = await nats.connect(nats_url)
        js = nc.jetstream()
        ids = iter(range(1, 10**12))

        async def write(requests: list[dict[str, Any]]) -> list[int]:
            rows = [{"ws": r["ws"], "id": f"ev_{next(ids)}", "body": r["post"]} for r in requests]
            async with engine.connect() as conn:
                result = await conn.execute(insert, {"rows": orjson.dumps(rows).decode()})
                return [row.seq for row in result]

        direct = await psycopg.AsyncConnection.connect(
            db_url.replace("postgresql+psycopg://", "postgresql://", 1),
            autocommit=True,
            prepare_threshold=0,
        )
        insert_direct = insert.text.replace(":rows", "%(rows)s")

        async def write_direct(requests: list[dict[str, Any]]) -> list[int]:
            rows = [{"ws": r["ws"], "id": f"ev_{next(ids)}", "body": r["post"]} for r in requests]
            cursor = await direct.execute(insert_direct, {"rows": orjson.dumps(rows).decode()})
            return [row[0] for row in await cursor.fetchall()]

        async def echo(msg: Any) -> None:
            await nc.publish(msg.reply, b'{"ok":true}')

        async def commit(msg: Any) -> None:
            (seq,) = await write([orjson.loads(msg.data)])
            await nc.publish(msg.reply, orjson.dumps({"ok": True, "seq": seq}))

        await nc.subscribe("floor.echo", cb=echo)
        await nc.subscribe("floor.commit", cb=commit)
        sub = await js.pull_subscribe(
            "floor.append.*",
            durable="floor_log",
            stream=APPEND_STREAM,
            config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, max_ack_pending=20_000),
        )
        print("ready", flush=True)
        while True:
            try:
                msgs = await sub.fetch(64, timeout=1)
            except (TimeoutError, nats.errors.TimeoutError):
                continue
            if not msgs:
                continue
            requests = [orjson.loads(m.data) for m in msgs]
            seqs = await (write_direct if requests[0].get("direct") else write)(requests)
            for request, seq in zip(requests, seqs, strict=True):  # not awaited: no ack read
                await nc.publish(
                    f"floor.events.{request['ws']}",
                    orjson.dumps({**request["post"], "seq": seq}),
                    reply=nc.new_inbox(),
                )
            for msg, seq in zip(msgs, seqs, strict=True):
                await nc.publish(msg.headers["Floor-Reply"], orjson.dumps({"ok": True, "seq": seq}))
                await msg.ack()

    uvloop.run(main())


STAGES = [
    ("/http", 1),
    ("/pg", 1),
    ("/request", 1),
    ("/commit", 1),
    ("/append", 1),
    ("/append", 8),
    ("/pg-direct", 1),
    ("/append-direct", 1),
    ("/append-direct", 8),
    ("/append-direct", 128),
]

# -- the client ---------------------------------------------------------------------------

WARM = 50  # requests before a stage's measured ones


async def measure(
    base: str, path: str, count: int, inflight: int, pids: dict[str, int]
) -> dict[str, Any]:
    from fastpath import cpu_seconds, postgres_cpu
    from lean import LeanHttp

    latencies: list[float] = []
    n = iter(range(10**9))

    def body() -> dict[str, str]:
        i = next(n)
        return {
            "type": "message.post",
            "space_id": "spc_1",
            "text": f"floor {i}",
            "idempotency_key": f"k{i}",
        }

    conns = [await LeanHttp.open(base) for _ in range(inflight)]
    for _ in range(WARM):
        status, _ = await conns[0].post(path, body())
        assert status == 200
    cpu_before = {k: cpu_seconds(p) for k, p in pids.items()}
    pg_before = postgres_cpu()
    client_before = time.process_time()
    started = time.perf_counter()
    left = iter(range(count))

    async def worker(http: LeanHttp) -> None:
        while next(left, None) is not None:
            t = time.perf_counter()
            status, answer = await http.post(path, body())
            latencies.append(time.perf_counter() - t)
            assert status == 200, answer

    await asyncio.gather(*(worker(c) for c in conns))
    elapsed = time.perf_counter() - started
    client_cpu = time.process_time() - client_before
    for c in conns:
        await c.close()
    cpu = {k: cpu_seconds(p) - cpu_before[k] for k, p in pids.items()}
    cpu["postgres (whole machine)"] = postgres_cpu() - pg_before
    s = sorted(latencies)
    return {
        "stage": path.strip("/"),
        "in_flight": inflight,
        "count": len(s),
        "warm": WARM,
        "per_second": round(len(s) / elapsed, 1),
        "p50_ms": round(statistics.median(s) * 1000, 2),
        "p99_ms": round(s[min(len(s) - 1, int(len(s) * 0.99))] * 1000, 2),
        "cpu_ms_per_request": {k: round(v / len(s) * 1000, 3) for k, v in cpu.items()},
        "client_cpu_ms_per_request": round(client_cpu / len(s) * 1000, 3),
    }


@contextlib.contextmanager
def floor_stack() -> Iterator[tuple[str, dict[str, int]]]:
    """The floor's processes up, on free ports: its nats-server, a database of its own, the
    log and the bare gateway; yields the gateway's base URL and each process's pid, and
    stops them all on the way out (bench/paired.py measures it beside Chips)."""
    import nats
    import psycopg

    from chips_common.db.scratch import plain_url
    from chips_devstack.procs import answers, free_port, nats_proc, wait_until

    root = Path(tempfile.mkdtemp(prefix="chips-floor-"))
    nats_port, port = free_port(), free_port()
    nats_server = nats_proc(nats_port, root / "nats", root).start()
    nats_url = f"nats://127.0.0.1:{nats_port}"
    name = f"chips_floor_{os.getpid()}"
    with psycopg.connect(plain_url(ADMIN), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    db_url = ADMIN.rsplit("/", 1)[0] + f"/{name}"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        wait_until(lambda: answers("127.0.0.1", nats_port), 30, "NATS")
        with psycopg.connect(plain_url(db_url), autocommit=True) as conn:
            for statement in SETUP:
                conn.execute(statement)

        async def streams() -> None:
            nc = await nats.connect(nats_url)
            js = nc.jetstream()
            await js.add_stream(
                name=APPEND_STREAM, subjects=["floor.append.*"], retention="workqueue"
            )
            await js.add_stream(name=EVENTS_STREAM, subjects=["floor.events.*"])
            await nc.close()

        asyncio.run(streams())
        me = [sys.executable, __file__, "--nats", nats_url, "--db", db_url]
        log = subprocess.Popen([*me, "--role", "log"], stdout=subprocess.PIPE)
        procs.append(log)
        assert log.stdout is not None and log.stdout.readline().strip() == b"ready"
        procs.append(subprocess.Popen([*me, "--role", "gateway", "--port", str(port)]))
        wait_until(lambda: answers("127.0.0.1", port), 30, "the bare gateway")
        pids = {"gateway": procs[1].pid, "log": procs[0].pid, "nats": nats_server.pid}
        yield f"http://127.0.0.1:{port}", pids
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)
        nats_server.stop()
        with psycopg.connect(plain_url(ADMIN), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="requests per stage")
    parser.add_argument("--label", default="", help="prefix of the result file")
    parser.add_argument(
        "--stages", default="", help="path:in_flight,... (default: every stage of the docstring)"
    )
    parser.add_argument("--role", choices=["gateway", "log"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--nats", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "gateway":
        return gateway(args.port, args.nats, args.db)
    if args.role == "log":
        return log_process(args.nats, args.db)
    stages = [
        ("/" + p.strip("/"), int(n))
        for p, _, n in (s.partition(":") for s in args.stages.split(",") if s)
    ] or STAGES

    with floor_stack() as (base, pids):
        load_before = os.getloadavg()
        figures = []
        for path, inflight in stages:
            # A pipelined stage runs longer, so its ramp up and down weigh little.
            count = args.count * max(1, inflight // 16)
            figure = asyncio.run(measure(base, path, count, inflight, pids))
            print(json.dumps(figure), flush=True)
            figures.append(figure)
        result = {
            "benchmark": "floor",
            "figures": figures,
            "machine": f"{platform.machine()}, Python {platform.python_version()}, "
            f"{os.cpu_count()} cores",
            "commit": subprocess.run(
                ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
            ).stdout.strip(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"{args.label}floor.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
