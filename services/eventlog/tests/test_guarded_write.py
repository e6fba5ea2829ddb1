"""A batch decided from memory is one guarded statement, against a real Postgres.

docs/adr/0105. The replica holding the lease decides a message post from the door state
in memory and writes it with one statement that moves the head row only from the seq the
state was decided at. When something else moved the head (a writer the state did not
see), nothing is written by that statement and the batch is decided again from the state
as committed; a key already in the table (a re-send older than the window in memory) is
answered as the duplicate it is.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import pytest
from opentelemetry.trace import INVALID_SPAN
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.append import Actor, AppendRequest, IssuedCredential
from chips_common.db.direct import RecordingDirect
from chips_common.nats.streams import Names
from chips_eventlog.consumer import Appender, Pending
from chips_eventlog.leases import Held, Leases

pytestmark = pytest.mark.integration


def request(ws: str, key: str, actor: Actor, *events: dict[str, Any], **more: Any) -> Pending:
    req = AppendRequest(
        request_id=key,
        workspace_id=ws,
        credential_id=f"crd_{actor.id}",
        actor=actor,
        idempotency_key=key,
        events=list(events),
        **more,
    )
    return Pending(msg=None, request=req, span=INVALID_SPAN)  # type: ignore[arg-type]


async def rows(engine: AsyncEngine, sql: str, **params: Any) -> list[Any]:
    async with engine.connect() as conn:
        return [tuple(r) for r in await conn.execute(text(sql), params)]


class Opened:
    """A workspace of its own with a room, created through a leased appender: the guarded
    statement through SQLAlchemy (``engine``) or on psycopg itself (``direct``, as the
    eventlog runs it: docs/adr/0120)."""

    def __init__(self, engine: AsyncEngine, way: str = "engine") -> None:
        tag = secrets.token_hex(3)
        self.ws = f"ws_{tag}"
        self.owner = Actor(kind="person", id=f"usr_{tag}")
        self.direct = RecordingDirect(engine.url.render_as_string(hide_password=False))
        self.appender = Appender(
            engine,
            None,  # type: ignore[arg-type]
            None,  # type: ignore[arg-type]
            Names("CHIPS", "chips", 1),
            direct=self.direct if way == "direct" else None,
        )
        self.leases = Leases(engine, 1, ttl=30)
        self.held = Held(partition=0)
        self.room = ""

    async def open(self) -> None:
        await self.leases.open()
        held = await self.leases.take(0)
        assert held is not None
        self.held = held
        created = [
            request(
                self.ws,
                "create",
                Actor(kind="operator", id="operator"),
                {"type": "workspace.created", "name": "Guarded"},
                {
                    "type": "participant.joined",
                    "participant_id": self.owner.id,
                    "kind": "person",
                    "name": "Arjun",
                    "role": "owner",
                },
                credentials=[
                    IssuedCredential(
                        credential_id=f"crd_{self.owner.id}",
                        participant_id=self.owner.id,
                        token_hash=f"h{self.ws}",
                    )
                ],
            ),
            request(
                self.ws,
                "room",
                self.owner,
                {"type": "space.created", "kind": "group", "title": "R"},
            ),
        ]
        await self.append(created)
        self.room = created[1].answer.events[0]["space_id"]  # type: ignore[union-attr]

    def post(self, key: str, words: str) -> Pending:
        return request(
            self.ws, key, self.owner, {"type": "message.post", "space_id": self.room, "text": words}
        )

    async def append(self, items: list[Pending], held: Held | None = None) -> None:
        await self.appender.append_group(self.ws, items, held or self.held)


@pytest.fixture(params=["engine", "direct"])
async def w(engine: AsyncEngine, request: pytest.FixtureRequest) -> AsyncIterator[Opened]:
    opened = Opened(engine, request.param)
    await opened.open()
    yield opened
    await opened.leases.close()
    await opened.direct.close()


async def test_a_post_decided_from_memory_is_one_statement(engine: AsyncEngine, w: Opened) -> None:
    sent: ClassVar[list[str]] = []

    def count(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
        sent.append(statement)

    w.direct.sent.clear()
    event.listen(engine.sync_engine, "before_cursor_execute", count)
    try:
        one = [w.post("p1", "hello")]
        await w.append(one)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", count)
    if w.appender.direct is not None:  # on psycopg itself, none through SQLAlchemy
        sent, engine_sent = w.direct.sent, sent
        assert engine_sent == []
    assert one[0].answer is not None and one[0].answer.ok
    seq = one[0].answer.seqs[0]
    assert len(sent) == 1 and sent[0].lstrip().startswith("WITH guard AS")
    ws = {"ws": w.ws, "seq": seq}
    assert await rows(engine, "SELECT head_seq FROM workspaces WHERE id = :ws", **ws) == [(seq,)]
    assert await rows(
        engine, "SELECT type FROM events WHERE workspace_id = :ws AND seq = :seq", **ws
    ) == [("message.post",)]
    assert await rows(
        engine, "SELECT seq FROM outbox WHERE workspace_id = :ws AND seq = :seq", **ws
    ) == [(seq,)]
    assert await rows(
        engine, "SELECT seqs FROM idempotency WHERE workspace_id = :ws AND key = 'p1'", **ws
    ) == [([seq],)]


async def test_a_head_moved_by_another_writer_is_decided_again(
    engine: AsyncEngine, w: Opened
) -> None:
    before = w.held.states[w.ws].head_seq
    # Another writer's post, which this replica's memory never saw.
    other = Appender(engine, None, None, Names("CHIPS", "chips", 1))  # type: ignore[arg-type]
    theirs = [w.post("theirs", "from elsewhere")]
    await other.append_group(w.ws, theirs, Held(partition=0))
    assert theirs[0].answer is not None and theirs[0].answer.seqs == [before + 1]

    mine = [w.post("mine", "from here")]
    await w.append(mine)
    assert mine[0].answer is not None and mine[0].answer.ok
    assert mine[0].answer.seqs == [before + 2], "decided after the other writer's event"
    assert await rows(
        engine,
        "SELECT seq, body->>'text' FROM events WHERE workspace_id = :ws AND seq > :seq"
        " ORDER BY seq",
        ws=w.ws,
        seq=before,
    ) == [(before + 1, "from elsewhere"), (before + 2, "from here")]
    assert w.held.states[w.ws].head_seq == before + 2


async def test_a_key_already_in_the_table_is_a_duplicate(engine: AsyncEngine, w: Opened) -> None:
    first = [w.post("again", "once")]
    await w.append(first)
    assert first[0].answer is not None
    seqs = first[0].answer.seqs
    # The key leaves the window in memory (as an old one, or one sent before the lease).
    w.held.states[w.ws].keys.clear()
    head_before = w.held.states[w.ws].head_seq

    again = [w.post("again", "once")]
    await w.append(again)
    assert again[0].answer is not None and again[0].answer.duplicate
    assert again[0].answer.seqs == seqs
    assert await rows(engine, "SELECT head_seq FROM workspaces WHERE id = :ws", ws=w.ws) == [
        (head_before,)
    ]
    assert w.held.resent_at > float("-inf"), "the partition reads its keys first for a while"
