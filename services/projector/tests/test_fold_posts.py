"""A batch of posts is folded on psycopg itself, as the engine would fold it (ADR 0120).

Two workspaces get the same log. One is folded by a handler with a ``Direct`` (posts on
psycopg, anything else on the engine), the other by a handler on the engine alone; the
read model's rows come out the same. A batch of posts goes on psycopg and sends nothing
through the engine; a batch with a room in it is folded on the engine, and the psycopg
attempt leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from chips_common.db.direct import RecordingDirect
from chips_projector.consumer import build_handler

pytestmark = pytest.mark.integration

TS = "2026-12-03T08:00:00Z"


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    built = create_async_engine(database_url)
    yield built
    await built.dispose()


class Log:
    """A workspace's log, written straight into ``events`` (as the eventlog would)."""

    def __init__(self, engine: AsyncEngine, workspace_id: str) -> None:
        self.engine = engine
        self.ws = workspace_id
        self.seq = 0
        self.room = f"spc_{workspace_id}"
        self.posts = 0

    async def write(self, *bodies: dict[str, Any]) -> int:
        async with self.engine.begin() as conn:
            if self.seq == 0:
                await conn.execute(
                    text("INSERT INTO workspaces VALUES (:ws, 'W', 0, now())"), {"ws": self.ws}
                )
            for body in bodies:
                self.seq += 1
                full = {
                    "v": 1,
                    "id": f"ev_{self.ws}_{self.seq}",
                    "ts": TS,
                    "workspace_id": self.ws,
                    "actor": {"kind": "person", "id": "usr_own"},
                    "seq": self.seq,
                    **body,
                }
                await conn.execute(
                    text(
                        "INSERT INTO events (workspace_id, seq, id, type, ts, actor_id,"
                        " space_id, body) VALUES (:ws, :seq, :id, :type, :ts, :actor, :space,"
                        " CAST(:body AS jsonb))"
                    ),
                    {
                        "ws": self.ws,
                        "seq": self.seq,
                        "id": full["id"],
                        "type": full["type"],
                        "ts": datetime(2026, 12, 3, 8, tzinfo=UTC),
                        "actor": "usr_own",
                        "space": full.get("space_id"),
                        "body": orjson.dumps(full).decode(),
                    },
                )
            await conn.execute(
                text("UPDATE workspaces SET head_seq = :seq WHERE id = :ws"),
                {"ws": self.ws, "seq": self.seq},
            )
        return self.seq

    def post(self, words: str) -> dict[str, Any]:
        self.posts += 1
        n = self.posts
        return {
            "type": "message.post",
            "space_id": self.room,
            "message_id": f"msg_{self.ws}_{n}",
            "text": words,
        }

    def room_made(self) -> dict[str, Any]:
        return {"type": "space.created", "space_id": self.room, "kind": "group", "title": "R"}


async def model(engine: AsyncEngine, ws: str) -> dict[str, Any]:
    """The read model of a workspace, its ids made the same for every workspace."""
    async with engine.connect() as conn:
        messages = (
            await conn.execute(
                text(
                    "SELECT seq, author_id, kind, text, reply_to, ts, card FROM rm_messages"
                    " WHERE workspace_id = :ws ORDER BY seq"
                ),
                {"ws": ws},
            )
        ).all()
        spaces = (
            await conn.execute(
                text("SELECT last_seq, message_count FROM rm_spaces WHERE workspace_id = :ws"),
                {"ws": ws},
            )
        ).all()
        checkpoint = (
            await conn.execute(
                text("SELECT seq FROM projector_checkpoints WHERE workspace_id = :ws"), {"ws": ws}
            )
        ).scalar()
    return {
        "messages": [tuple(r) for r in messages],
        "spaces": [tuple(r) for r in spaces],
        "checkpoint": checkpoint,
    }


async def test_posts_fold_on_psycopg_as_on_the_engine(
    engine: AsyncEngine, database_url: str
) -> None:
    direct = RecordingDirect(database_url, size=1)
    on_psycopg, on_engine = build_handler(engine, direct), build_handler(engine)
    sent: list[str] = []

    def count(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
        sent.append(statement)

    try:
        a, b = Log(engine, "ws_fold_a"), Log(engine, "ws_fold_b")
        for log, handle in ((a, on_psycopg), (b, on_engine)):
            # A room and a post: the room is not a post, so the engine folds the batch.
            await log.write(log.room_made())
            seq = await log.write(log.post("first"))
            direct.sent.clear()
            await handle({log.ws: seq})
            if handle is on_psycopg:
                assert direct.sent, "psycopg was tried first"
            assert (await model(engine, log.ws))["checkpoint"] == 2

        for log, handle in ((a, on_psycopg), (b, on_engine)):
            # Posts alone.
            await log.write(log.post("second"))
            seq = await log.write(log.post("third"), log.post("fourth"))
            direct.sent.clear()
            sent.clear()
            event.listen(engine.sync_engine, "before_cursor_execute", count)
            try:
                await handle({log.ws: seq})
            finally:
                event.remove(engine.sync_engine, "before_cursor_execute", count)
            if handle is on_psycopg:
                assert sent == [], "nothing went through the engine"
                assert len(direct.sent) == 2, direct.sent  # lock and read; posts and checkpoint
            else:
                assert direct.sent == []
                assert sent, "the engine folded it"

        folded_a, folded_b = await model(engine, a.ws), await model(engine, b.ws)
        assert folded_a == folded_b
        assert folded_a["checkpoint"] == 5
        assert [m[3] for m in folded_a["messages"]] == ["first", "second", "third", "fourth"]
        assert folded_a["spaces"] == [(5, 4)]
    finally:
        await direct.close()
