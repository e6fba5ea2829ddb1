"""Posts alone are indexed in two autocommit statements, against a real Postgres.

docs/adr/0110. The search service reads each workspace's checkpoint and the page after it
without a lock, then writes every post and moves every checkpoint in one statement, each
workspace's only if its checkpoint is still what was read. A workspace whose checkpoint
moved meanwhile, or whose page holds an edit, a step, a thread or an erasure, is left to
the locked fold, which indexes it as before.

The service sends those two statements on psycopg itself (``Direct``, docs/adr/0120);
each test of the handler runs both ways, the statements counted on SQLAlchemy's events
or on a counting psycopg connection, and one compares the rows both ways write.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

import psycopg
import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from chips_common.db.direct import Direct, plain_url
from chips_search import consumer

pytestmark = pytest.mark.integration

TS = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


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


class Counted(psycopg.AsyncConnection[Any]):
    """A psycopg connection that keeps what it was sent, and whether in autocommit."""

    sent: ClassVar[list[tuple[bool, str]]] = []

    async def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
        Counted.sent.append((self.autocommit, str(query)))
        return await super().execute(query, *args, **kwargs)


class CountedDirect(Direct):
    connection_class = Counted


@dataclass
class Way:
    """The handler as the service builds it: posts alone through SQLAlchemy (``engine``)
    or on psycopg itself (``direct``, as the service runs it: docs/adr/0120)."""

    engine: AsyncEngine
    direct: Direct | None
    # What the last ``counted`` block sent on the way under test, and on the other one.
    hot: list[tuple[bool, str]] = field(default_factory=list)
    other: list[tuple[bool, str]] = field(default_factory=list)

    def handler(self) -> Any:
        return consumer.build_handler(self.engine, self.direct)

    async def handle(self, upto: dict[str, int]) -> None:
        """One batch, what it sent kept in ``hot`` and ``other``."""
        Counted.sent.clear()
        sent, stop = counting(self.engine)
        try:
            await self.handler()(upto)
        finally:
            stop()
        if self.direct is None:
            self.hot, self.other = sent, list(Counted.sent)
        else:
            self.hot, self.other = list(Counted.sent), sent


@pytest.fixture(params=["engine", "direct"])
async def way(engine: AsyncEngine, request: pytest.FixtureRequest) -> AsyncIterator[Way]:
    direct = CountedDirect(engine.url.render_as_string(hide_password=False), size=2)
    yield Way(engine, direct if request.param == "direct" else None)
    await direct.close()


async def test_posts_of_many_workspaces_are_two_statements(engine: AsyncEngine, way: Way) -> None:
    logs = [Log(engine) for _ in range(3)]
    for i, log in enumerate(logs):
        await log.post(f"apple{i} first")
        await log.add("reaction.added", message_id="msg_x", emoji="+1")
        await log.post(f"pear{i} second")
    quiet = Log(engine)  # a reaction alone: its checkpoint moves, nothing is written
    await quiet.add("reaction.added", message_id="msg_y", emoji="+1")
    await way.handle({log.ws: log.head for log in [*logs, quiet]})
    assert [autocommit for autocommit, _ in way.hot] == [True, True], way.hot
    assert way.other == [], "the two statements go one way only"
    if way.direct is not None:  # the very statements the engine sends, compiled once
        assert [sql for _, sql in way.hot] == [
            consumer.pages._READ_DIRECT,
            consumer.pages._POSTS_IF_STILL_DIRECT,
        ]
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
        read = await consumer.pages.read_unlocked(index, {log.ws: None, other.ws: None}, 100)
        assert read.checkpoints == {log.ws: 1, other.ws: 1}
        edited = await log.add("message.edited", message_id="msg_none", text="x")
        async with engine.connect() as conn2, conn2.begin():
            await consumer.apply_batch(conn2, {log.ws: None})
        assert await log.checkpoint() == edited
        for ev, _ in read.events:
            await consumer.store.apply_message_post(index, ev)
        moved = await consumer.pages.write_if_still(
            index, {log.ws: (1, 2), other.ws: (1, 2)}, read.absent
        )
    assert moved == {other.ws}
    assert await log.checkpoint() == edited, "the checkpoint is not moved back"
    assert await other.checkpoint() == 2
    assert await log.found("plum") == [1, 2], "the other fold wrote it, once"
    assert await other.found("fig") == [1, 2]


async def test_a_page_with_more_than_posts_is_folded_locked(engine: AsyncEngine, way: Way) -> None:
    log, plain = Log(engine), Log(engine)
    first = await log.post("kiwi first")
    await log.add("message.deleted", message_id="msg_gone")
    await plain.post("lime only")
    reached, rest = await run_posts(way, {log.ws: None, plain.ws: None})
    assert rest == {log.ws}
    assert reached == {plain.ws: 1}
    assert await log.checkpoint() is None and await log.found("kiwi") == []
    await way.handle({log.ws: log.head})
    assert await log.found("kiwi") == [first]
    assert await log.checkpoint() == log.head
    assert await plain.found("lime") == [1]
    # The unlocked read found the deletion (one statement the way under test, nothing to
    # write); the locked fold is a transaction on the engine, either way.
    assert [autocommit for autocommit, _ in way.hot][:1] == [True]
    engine_sent = way.other if way.direct is not None else way.hot[1:]
    assert len(way.hot + way.other) == 1 + len(engine_sent)
    assert engine_sent and not any(autocommit for autocommit, _ in engine_sent), engine_sent


async def run_posts(way: Way, upto: dict[str, int | None]) -> tuple[dict[str, int], set[str]]:
    if way.direct is not None:
        return await way.direct.run(lambda conn: consumer.fold_posts_direct(conn, upto))
    async with way.engine.connect() as conn:
        return await consumer.fold_posts(conn, upto)


async def test_a_thread_s_posts_are_in_its_room(engine: AsyncEngine, way: Way) -> None:
    log = Log(engine)
    room, thread = log.room, f"spc_t{secrets.token_hex(3)}"
    await log.add("space.created", kind="thread", parent_space_id=room, space_id=thread)
    await way.handle({log.ws: log.head})  # a thread is folded locked: it is not a post
    assert await log.checkpoint() == 1
    log.room = thread
    await log.post("melon in the thread")
    await way.handle({log.ws: log.head})
    assert [autocommit for autocommit, _ in way.hot] == [True, True], way.hot
    assert way.other == []
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT space_id, room_id FROM search_docs WHERE workspace_id = :ws"),
            {"ws": log.ws},
        )
        assert [tuple(r) for r in rows] == [(thread, room)]


async def test_a_checkpoint_moved_meanwhile_writes_nothing_on_psycopg_either(
    engine: AsyncEngine,
) -> None:
    log, other = Log(engine), Log(engine)
    await log.post("plum first")
    await other.post("fig first")
    await consumer.build_handler(engine)({log.ws: 1, other.ws: 1})
    await log.post("plum second")
    await other.post("fig second")
    direct = Direct(engine.url.render_as_string(hide_password=False), size=1)
    try:
        async with direct.connection() as conn:
            posts = consumer.store.Posts()
            read = await consumer.pages.read_unlocked_direct(
                conn, posts, {log.ws: None, other.ws: None}, 100
            )
            assert read.checkpoints == {log.ws: 1, other.ws: 1}
            edited = await log.add("message.edited", message_id="msg_none", text="x")
            async with engine.connect() as conn2, conn2.begin():
                await consumer.apply_batch(conn2, {log.ws: None})
            for ev, _ in read.events:
                await consumer.store.apply_message_post(posts, ev)
            moved = await consumer.pages.write_if_still_direct(
                conn, posts, {log.ws: (1, 2), other.ws: (1, 2)}, read.absent
            )
    finally:
        await direct.close()
    assert moved == {other.ws}
    assert await log.checkpoint() == edited, "the checkpoint is not moved back"
    assert await other.checkpoint() == 2
    assert await log.found("plum") == [1, 2], "the other fold wrote it, once"
    assert await other.found("fig") == [1, 2]


async def script(log: Log, handle: Any) -> None:
    """The same events, folded batch by batch: posts of every kind, a thread, more posts."""
    thread = f"spc_t{log.ws}"
    await log.add("message.post", message_id="msg_1", text="Hello café world")
    await log.add("reaction.added", message_id="msg_1", emoji="+1")
    await log.add(
        "message.post",
        message_id="msg_2",
        kind="task",
        text="a caption",
        task={"goal": "ship the index", "constraints": ["fast", "exact"]},
    )
    await log.add("message.post", message_id="msg_3", text="   ")  # no words: no row
    await handle({log.ws: log.head})
    await log.add("space.created", kind="thread", parent_space_id=log.room, space_id=thread)
    await handle({log.ws: log.head})
    await log.add("message.post", message_id="msg_4", text="in the thread", space_id=thread)
    await log.add("message.post", message_id="msg_5", text="back in the room")
    await handle({log.ws: log.head})
    await handle({log.ws: log.head})  # nothing new: nothing written


async def index_of(log: Log) -> list[tuple[Any, ...]]:
    """Every row of the workspace in the index, its own ids written the same for any."""
    async with log.engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT doc_id, seq, space_id, room_id, kind, message_kind, message_id,"
                " author_id, ts, words, extra, tsv::text, run_id, step_id"
                " FROM search_docs WHERE workspace_id = :ws ORDER BY seq"
            ),
            {"ws": log.ws},
        )
        return [
            tuple(v.replace(log.ws, "WS") if isinstance(v, str) else v for v in row) for row in rows
        ]


async def test_both_ways_write_the_same_rows_and_notify(engine: AsyncEngine) -> None:
    url = engine.url.render_as_string(hide_password=False)
    direct = CountedDirect(url, size=2)
    indexes: dict[str, list[tuple[Any, ...]]] = {}
    heard: dict[str, list[str]] = {}
    try:
        async with await psycopg.AsyncConnection.connect(
            plain_url(url), autocommit=True
        ) as listener:
            await listener.execute("LISTEN search_checkpoint")
            for name, used in (("engine", None), ("direct", direct)):
                log = Log(engine)
                log.room = f"spc_{log.ws}"
                Counted.sent.clear()
                await script(log, consumer.build_handler(engine, used))
                assert (len(Counted.sent) > 0) == (used is not None)
                assert await log.checkpoint() == log.head
                indexes[name] = await index_of(log)
                heard[name] = [
                    n.payload.replace(log.ws, "WS")
                    async for n in listener.notifies(timeout=0.5)
                    if n.payload.startswith(f"{log.ws} ")
                ]
    finally:
        await direct.close()
    assert indexes["direct"] == indexes["engine"]
    assert [row[0] for row in indexes["direct"]] == ["msg_1", "msg_2", "msg_4", "msg_5"]
    assert heard["direct"] == heard["engine"] == ["WS 4", "WS 5", "WS 7"]


async def test_a_broken_connection_is_replaced_and_the_batch_sent_once_more(
    engine: AsyncEngine,
) -> None:
    url = engine.url.render_as_string(hide_password=False)
    direct = Direct(url, size=1)
    try:
        log = Log(engine)
        await log.post("grape first")
        handle = consumer.build_handler(engine, direct)
        await handle({log.ws: log.head})
        async with direct.connection() as conn:
            pid = conn.info.backend_pid
        async with engine.connect() as admin:
            await admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        await asyncio.sleep(0.1)
        await log.post("grape second")
        await handle({log.ws: log.head})
        async with direct.connection() as conn:
            assert conn.info.backend_pid != pid
    finally:
        await direct.close()
    assert await log.found("grape") == [1, 2]
    assert await log.checkpoint() == 2
