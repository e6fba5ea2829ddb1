"""An erasure the eventlog could not finish is finished by its sweeper (docs/adr/0010).

The door writes ``erasures`` in the transaction that logs ``space.erased``, and the row is
removed only once the stream has been purged below the ``space.erased``. Here the crash
is staged by hand: a ``space.erased`` is in the log with its ``erasures`` row, but the
stream still holds a copy of an erased event and never got the ``space.erased``. The
running eventlog's sweeper must publish it, purge below it, and clear the row.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from datetime import UTC, datetime

import nats
import psycopg

from tests.e2e.test_erase import db_url, stream_copies


async def test_the_sweeper_finishes_a_purge_a_crash_left_undone(stack) -> None:
    workspace = f"ws_crash{secrets.token_hex(8)}"
    word = f"erased-{secrets.token_hex(6)}"
    space = f"spc_gone{secrets.token_hex(4)}"
    now = datetime.now(UTC)
    stale = {
        "v": 1,
        "id": f"evt_{secrets.token_hex(8)}",
        "seq": 1,
        "type": "message.post",
        "workspace_id": workspace,
        "space_id": space,
        "text": word,
    }
    erased = {
        "v": 1,
        "id": f"evt_{secrets.token_hex(8)}",
        "seq": 2,
        "ts": now.isoformat(),
        "workspace_id": workspace,
        "actor": {"kind": "person", "id": "usr_x"},
        "type": "space.erased",
        "space_id": space,
        "threads": [],
        "follows": [],
    }

    nc = await nats.connect(stack.env["CHIPS_NATS_URL"])
    try:
        await nc.jetstream().publish(f"chips.events.{workspace}", json.dumps(stale).encode())
    finally:
        await nc.close()
    assert any(word in text for text in await stream_copies(stack, workspace))

    with psycopg.connect(db_url(stack)) as conn:
        conn.execute(
            "INSERT INTO events (workspace_id, seq, id, type, ts, actor_id, space_id, body)"
            " VALUES (%s, 2, %s, 'space.erased', %s, 'usr_x', %s, %s)",
            (workspace, erased["id"], now, space, json.dumps(erased)),
        )
        conn.execute("INSERT INTO erasures (workspace_id, seq) VALUES (%s, 2)", (workspace,))

    for _ in range(60):
        with psycopg.connect(db_url(stack)) as conn:
            left = conn.execute(
                "SELECT count(*) FROM erasures WHERE workspace_id = %s", (workspace,)
            ).fetchone()
        if left == (0,):
            break
        await asyncio.sleep(0.5)
    assert left == (0,), "the sweeper did not finish the erasure"
    copies = await stream_copies(stack, workspace)
    assert not any(word in text for text in copies)
    assert [json.loads(text)["type"] for text in copies] == ["space.erased"]
