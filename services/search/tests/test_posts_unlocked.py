"""Posts alone are indexed in two autocommit statements, against a real Postgres.

docs/adr/0110. The search service reads each workspace's checkpoint and the page after it
without a lock, then writes every post and moves every checkpoint in one statement, each
workspace's only if its checkpoint is still what was read. A workspace whose checkpoint
moved meanwhile, or whose page holds an edit, a step, a thread or an erasure, is left to
the locked fold, which indexes it as before.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from chips_common.db.scratch import scratch_database
from chips_search import consumer

pytestmark = pytest.mark.integration

ADMIN = os.environ.get(
    "CHIPS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
TS = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def database_url() -> Iterator[str]:
    database = scratch_database(ADMIN, "chips_search", migrate_timeout=120)
    try:
        url = database.__enter__()
    except psycopg.OperationalError as exc:
        pytest.skip(f"no Postgres to test against: {exc}")
    try:
        yield url
    finally:
        database.__exit__(None, None, None)


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    built = create_async_engine(database_url)
    yield built
    await built.dispose()


class Log:
    """A workspace of its own whose events are written straight into the log."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.ws = f"ws_{secrets.token_hex(3)}"
        self.room = f"spc_{secrets.token_hex(3)}"
        self.head = 0

    async def add(self, type_: str, **fields: Any) -> int:
        self.head += 1
        body = {
            "type": type_,
            "id": f"evt_{self.ws}_{self.head}",
            "workspace_id": self.ws,
            "seq": self.head,
            "ts": TS.isoformat().replace("+00:00", "Z"),
            "actor": {"kind": "person", "id": "usr_a"},
            "space_id": self.room,
            **fields,
        }
        async with self.engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO workspaces (id, name, head_seq, created_at)"
                    " VALUES (:ws, 'W', :seq, :ts)"
                    " ON CONFLICT (id) DO UPDATE SET head_seq = excluded.head_seq"
                ),
                {"ws": self.ws, "seq": self.head, "ts": TS},
            )
            await conn.execute(
                text(
                    "INSERT INTO events (workspace_id, seq, id, type, ts, actor_id, space_id,"
                    " body) VALUES (:ws, :seq, :id, :type, :ts, 'usr_a', :space,"
                    " CAST(:body AS jsonb))"
                ),
                {
                    "ws": self.ws,
                    "seq": self.head,
                    "id": body["id"],
                    "type": type_,
                    "ts": TS,
                    "space": body["space_id"],
                    "body": json.dumps(body),
                },
            )
        return self.head

    async def post(self, words: str) -> int:
        return await self.add("message.post", message_id=f"msg_{secrets.token_hex(4)}", text=words)

    async def found(self, word: str) -> list[int]:
        async with self.engine.connect() as conn:
            rows = await conn.execute(
                text(
                    "SELECT seq FROM search_docs WHERE workspace_id = :ws"
                    " AND tsv @@ to_tsquery('chips_search', :word) ORDER BY seq"
                ),
                {"ws": self.ws, "word": word},
            )
            return [row.seq for row in rows]

    async def checkpoint(self) -> int | None:
        async with self.engine.connect() as conn:
            return (
                await conn.execute(
                    text("SELECT seq FROM search_checkpoints WHERE workspace_id = :ws"),
                    {"ws": self.ws},
                )
            ).scalar()


def counting(engine: AsyncEngine) -> tuple[list[tuple[bool, str]], Any]:
    """Every statement sent, with whether its connection was in autocommit (no BEGIN and
    no COMMIT sent around it): a round trip each, and two more for a transaction."""
    sent: list[tuple[bool, str]] = []

    def count(conn: Any, _cur: Any, statement: str, *_: Any) -> None:
        sent.append((bool(conn.connection.dbapi_connection.autocommit), statement))

    event.listen(engine.sync_engine, "before_cursor_execute", count)
    return sent, lambda: event.remove(engine.sync_engine, "before_cursor_execute", count)


async def test_posts_of_many_workspaces_are_two_statements(engine: AsyncEngine) -> None:
    logs = [Log(engine) for _ in range(3)]
    for i, log in enumerate(logs):
        await log.post(f"apple{i} first")
        await log.add("reaction.added", message_id="msg_x", emoji="+1")
        await log.post(f"pear{i} second")
    quiet = Log(engine)  # a reaction alone: its checkpoint moves, nothing is written
    await quiet.add("reaction.added", message_id="msg_y", emoji="+1")
    handle = consumer.build_handler(engine)
    sent, stop = counting(engine)
    try:
        await handle({log.ws: log.head for log in [*logs, quiet]})
    finally:
        stop()
    assert [autocommit for autocommit, _ in sent] == [True, True], sent
    for i, log in enumerate(logs):
        assert await log.found(f"apple{i}") == [1]
        assert await log.found(f"pear{i}") == [3]
        assert await log.checkpoint() == 3
    assert await quiet.checkpoint() == 1


async def test_a_checkpoint_moved_meanwhile_writes_nothing_of_its_workspace(
    engine: AsyncEngine,
) -> None:
    log, other = Log(engine), Log(engine)
    await log.post("plum first")
    await other.post("fig first")
    await consumer.build_handler(engine)({log.ws: 1, other.ws: 1})
    await log.post("plum second")
    await other.post("fig second")

    # Read as the unlocked fold reads; then another fold moves the first workspace's
    # checkpoint on, with an event (an edit) the read did not see.
    async with engine.connect() as conn:
        aconn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        index = consumer.store.Index(aconn)
        read = await consumer.store.read_unlocked(index, {log.ws: None, other.ws: None}, 100)
        assert read.checkpoints == {log.ws: 1, other.ws: 1}
        edited = await log.add("message.edited", message_id="msg_none", text="x")
        async with engine.connect() as conn2, conn2.begin():
            await consumer.apply_batch(conn2, {log.ws: None})
        assert await log.checkpoint() == edited
        for ev, _ in read.events:
            await consumer.store.apply_message_post(index, ev)
        moved = await consumer.store.write_if_still(
            index, {log.ws: (1, 2), other.ws: (1, 2)}, read.absent
        )
    assert moved == {other.ws}
    assert await log.checkpoint() == edited, "the checkpoint is not moved back"
    assert await other.checkpoint() == 2
    assert await log.found("plum") == [1, 2], "the other fold wrote it, once"
    assert await other.found("fig") == [1, 2]


async def test_a_page_with_more_than_posts_is_folded_locked(engine: AsyncEngine) -> None:
    log, plain = Log(engine), Log(engine)
    first = await log.post("kiwi first")
    await log.add("message.deleted", message_id="msg_gone")
    await plain.post("lime only")
    reached, rest = await run_posts(engine, {log.ws: None, plain.ws: None})
    assert rest == {log.ws}
    assert reached == {plain.ws: 1}
    assert await log.checkpoint() is None and await log.found("kiwi") == []
    await consumer.build_handler(engine)({log.ws: log.head})
    assert await log.found("kiwi") == [first]
    assert await log.checkpoint() == log.head
    assert await plain.found("lime") == [1]


async def run_posts(
    engine: AsyncEngine, upto: dict[str, int | None]
) -> tuple[dict[str, int], set[str]]:
    async with engine.connect() as conn:
        return await consumer.fold_posts(conn, upto)


async def test_a_thread_s_posts_are_in_its_room(engine: AsyncEngine) -> None:
    log = Log(engine)
    room, thread = log.room, f"spc_t{secrets.token_hex(3)}"
    await log.add("space.created", kind="thread", parent_space_id=room, space_id=thread)
    handle = consumer.build_handler(engine)
    await handle({log.ws: log.head})  # a thread is folded locked: it is not a post
    log.room = thread
    await log.post("melon in the thread")
    sent, stop = counting(engine)
    try:
        await handle({log.ws: log.head})
    finally:
        stop()
    assert [autocommit for autocommit, _ in sent] == [True, True], sent
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT space_id, room_id FROM search_docs WHERE workspace_id = :ws"),
            {"ws": log.ws},
        )
        assert [tuple(r) for r in rows] == [(thread, room)]
