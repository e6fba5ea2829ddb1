"""A periodic outbox sweep leaves what the publisher is still confirming alone.

Under a steady load the outbox always holds the events of the last moments, published and
waiting for their acks or their clearing; a sweep that took them published each again and
chased the load's tail. It takes only events logged a while ago; the sweep at start takes
every one (a crash left them).
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.ids import new_id
from chips_eventlog import store


async def logged(engine: AsyncEngine, ws: str, seq: int, age_seconds: float) -> None:
    """An event of ``ws`` logged ``age_seconds`` ago, still in the outbox."""
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO events (workspace_id, seq, id, type, ts, actor_id, body)"
                " VALUES (:ws, :seq, :id, 'message.post',"
                " now() - make_interval(secs => CAST(:age AS float8)), 'usr_1',"
                " jsonb_build_object('workspace_id', CAST(:ws AS text),"
                " 'seq', CAST(:seq AS bigint), 'id', CAST(:id AS text)))"
            ),
            {"ws": ws, "seq": seq, "id": new_id("evt"), "age": age_seconds},
        )
        await conn.execute(
            text("INSERT INTO outbox (workspace_id, seq) VALUES (:ws, :seq)"),
            {"ws": ws, "seq": seq},
        )


async def test_a_settled_sweep_takes_only_what_was_logged_a_while_ago(engine: AsyncEngine) -> None:
    ws = new_id("ws")
    await logged(engine, ws, 1, 30.0)
    await logged(engine, ws, 2, 0.0)
    mine = [e for e, _ in await store.unpublished(engine) if e["workspace_id"] == ws]
    assert [e["seq"] for e in mine] == [1, 2]  # at start: every one
    settled = await store.unpublished(engine, settled=1.0)
    assert [e["seq"] for e, _ in settled if e["workspace_id"] == ws] == [1]
