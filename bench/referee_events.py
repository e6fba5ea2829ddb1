"""What the referee spends on an event that changes nothing it keeps: statements and CPU.

Makes a fresh database (``CHIPS_TEST_POSTGRES_URL``, as the eventlog's tests do), writes
a room into its log (a person, a harness) and then COUNT posts of the person to the
harness, the ``seen`` load's events; then hands the referee's handler each one in turn,
as its consumer would, and prints the statements it sent and the CPU it used per event.
Nothing it decides is appended: none of these events calls for anything, and the
stand-in appender fails the run if one did.

    .venv/bin/python bench/referee_events.py [--count 500] [--ping] [--direct]

``--direct``: the handler with a ``Direct`` beside its engine, as the service wires it
(docs/adr/0120); the statements it sends on psycopg itself are counted too.

To measure another version, put its packages first:
``PYTHONPATH=$(ls -d /tmp/base/libs/*/src /tmp/base/services/*/src | tr '\\n' :)``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import event, insert
from sqlalchemy.ext.asyncio import create_async_engine

from chips_common.db import tables as t
from chips_common.db.direct import RecordingDirect
from chips_common.db.scratch import scratch_database
from chips_referee.appender import Appender
from chips_referee.consumer import build_handler
from chips_referee.rooms import Clock

ADMIN = os.environ.get(
    "CHIPS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
WS, ROOM, PERSON, HARNESS = "ws_bench", "spc_bench", "usr_bench", "hrn_bench"


class NoAppends:
    async def append(self, workspace_id: str, key: str, events: list[dict[str, Any]]) -> Any:
        raise AssertionError(f"the referee decided something: {key} {events}")


def rows(count: int) -> list[dict[str, Any]]:
    t0 = datetime(2026, 12, 2, 6, 0, tzinfo=UTC)
    created = {
        "type": "space.created",
        "space_id": ROOM,
        "kind": "room",
        "members": [HARNESS],
    }
    bodies = [(PERSON, created)] + [
        (
            PERSON,
            {
                "type": "message.post",
                "space_id": ROOM,
                "text": f"seen {i}",
                "addressed_to": [HARNESS],
            },
        )
        for i in range(count)
    ]
    out = []
    for seq, (actor, body) in enumerate(bodies, start=1):
        ts = t0 + timedelta(milliseconds=seq)
        full = {
            **body,
            "id": f"evt_{seq}",
            "seq": seq,
            "workspace_id": WS,
            "ts": ts.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
            "actor": {"kind": "person", "id": actor},
        }
        out.append(
            {
                "workspace_id": WS,
                "seq": seq,
                "id": f"evt_{seq}",
                "type": body["type"],
                "ts": ts,
                "actor_id": actor,
                "space_id": ROOM,
                "body": full,
            }
        )
    return out


async def measure(url: str, count: int, ping: bool, direct: bool) -> dict[str, Any]:
    # As the service builds it: main's pinged each connection leaving the pool.
    engine = create_async_engine(url, pool_size=4, pool_pre_ping=ping)
    statements = 0

    def counted(*_: Any) -> None:
        nonlocal statements
        statements += 1

    on_psycopg = RecordingDirect(url, size=2) if direct else None

    async with engine.begin() as conn:
        await conn.execute(insert(t.events), rows(count))
    event.listen(engine.sync_engine, "before_cursor_execute", counted)
    if ping:  # the ping is a statement too, sent past the engine's events
        event.listen(engine.sync_engine.pool, "checkout", counted)
    appender, clock = cast(Appender, NoAppends()), Clock(quiet=20, silent=600)
    try:  # main's handler kept nothing in memory
        from chips_referee.consumer import Memory

        memory = Memory()
        if on_psycopg is not None:
            handle = build_handler(engine, appender, clock, memory, on_psycopg)
        else:
            handle = build_handler(engine, appender, clock, memory)
    except ImportError:
        handle = build_handler(engine, appender, clock)  # type: ignore[call-arg]
    await handle(WS, 1)  # the room's creation, and a connection in the pool
    statements = 0
    if on_psycopg is not None:
        on_psycopg.sent.clear()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for seq in range(2, count + 2):
        await handle(WS, seq)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    if on_psycopg is not None:
        statements += len(on_psycopg.sent)
        await on_psycopg.close()
    await engine.dispose()
    return {
        "events": count,
        "direct": direct,
        "statements_per_event": round(statements / count, 2),
        "cpu_ms_per_event": round(cpu / count * 1000, 3),
        "wall_ms_per_event": round(wall / count * 1000, 3),
        "load_average": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--ping", action="store_true", help="ping each checkout (main's engine)")
    parser.add_argument("--direct", action="store_true", help="with a Direct, as the service")
    args = parser.parse_args()
    with scratch_database(ADMIN, "chips_referee_bench") as url:
        print(json.dumps(asyncio.run(measure(url, args.count, args.ping, args.direct))))


if __name__ == "__main__":
    main()
