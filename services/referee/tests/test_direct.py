"""The referee's handler on psycopg itself, against a real Postgres (docs/adr/0120).

An event whose rooms are kept in memory and that carries no usage (most message posts) is
caught up with the same three statements on a psycopg connection of the handler's
``Direct``, none through SQLAlchemy; anything else is undone and done on the engine. The
same events handled either way leave the same rows and append the same things.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from sqlalchemy import event, insert, text
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.append import AppendAnswer
from chips_common.db import tables as t
from chips_common.db.direct import RecordingDirect
from chips_common.rules.lead import told_key
from chips_referee import consumer, rooms
from chips_referee.appender import Appender
from chips_referee.consumer import Memory, build_handler
from chips_referee.rooms import Clock

pytestmark = pytest.mark.integration

CLOCK = Clock(quiet=20, silent=600)
PERSON, HARNESS, SECOND = "usr_p", "hrn_h", "hrn_s"
ROOM, OTHER = "spc_room", "spc_other"


class Answers:
    """Records what the referee appends; the log answers ok."""

    def __init__(self) -> None:
        self.appended: list[tuple[str, list[dict[str, Any]]]] = []

    async def append(self, workspace_id: str, key: str, events: list[dict[str, Any]]) -> Any:
        self.appended.append((key, events))
        return AppendAnswer(request_id="req_1", ok=True, seqs=[1])


class Referee:
    """A workspace of its own and the referee's handler, on the engine only (``engine``)
    or with a ``Direct`` beside it (``direct``), as app.py wires it."""

    def __init__(self, engine: AsyncEngine, way: str) -> None:
        self.engine = engine
        self.ws = f"ws_{secrets.token_hex(3)}"
        self.answers = Answers()
        self.direct = RecordingDirect(engine.url.render_as_string(hide_password=False), size=2)
        self.handle = build_handler(
            engine,
            cast(Appender, self.answers),
            CLOCK,
            Memory(),
            self.direct if way == "direct" else None,
        )
        self.seq = 0
        self.t0 = datetime.now(UTC)

    async def log(self, actor: str, **body: Any) -> int:
        """An event into the workspace's log, as the eventlog writes it."""
        self.seq += 1
        ts = self.t0 + timedelta(milliseconds=self.seq)
        full = {
            **body,
            "id": f"evt_{self.ws}_{self.seq}",
            "seq": self.seq,
            "workspace_id": self.ws,
            "ts": ts.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
            "actor": {"kind": "person" if actor.startswith("usr_") else "harness", "id": actor},
        }
        async with self.engine.begin() as conn:
            await conn.execute(
                insert(t.events),
                {
                    "workspace_id": self.ws,
                    "seq": self.seq,
                    "id": full["id"],
                    "type": body["type"],
                    "ts": ts,
                    "actor_id": actor,
                    "space_id": body.get("space_id"),
                    "body": full,
                },
            )
        return self.seq

    async def handled(self, actor: str, **body: Any) -> tuple[list[str], list[str]]:
        """Log an event and hand it to the handler: the statements it sent through
        SQLAlchemy and on psycopg itself."""
        seq = await self.log(actor, **body)
        through_engine: list[str] = []

        def count(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
            through_engine.append(statement)

        self.direct.sent.clear()
        event.listen(self.engine.sync_engine, "before_cursor_execute", count)
        try:
            await self.handle(self.ws, seq)
        finally:
            event.remove(self.engine.sync_engine, "before_cursor_execute", count)
        return through_engine, list(self.direct.sent)

    async def rows(self) -> dict[str, Any]:
        async with self.engine.connect() as conn:
            checkpoint = (
                await conn.execute(
                    text("SELECT seq FROM referee_checkpoints WHERE workspace_id = :ws"),
                    {"ws": self.ws},
                )
            ).scalar()
            kept = await conn.execute(
                text(
                    "SELECT space_id, body, due_at FROM referee_rooms WHERE workspace_id = :ws"
                    " ORDER BY space_id"
                ),
                {"ws": self.ws},
            )
            return {"checkpoint": checkpoint, "rooms": [tuple(r) for r in kept]}


@pytest.fixture
async def direct_referee(engine: AsyncEngine) -> Any:
    referee = Referee(engine, "direct")
    yield referee
    await referee.direct.close()


def post(words: str, space_id: str = ROOM, **more: Any) -> dict[str, Any]:
    return {"type": "message.post", "space_id": space_id, "text": words, **more}


async def open_room(referee: Referee) -> None:
    """A room with a harness in it, and the referee's first look (rooms read from rows);
    then a person asks the harness alone (the room's row says so)."""
    await referee.handled(
        PERSON, type="space.created", space_id=ROOM, kind="group", members=[HARNESS]
    )
    await referee.handled(PERSON, **post("can you look?", addressed_to=[HARNESS]))


async def test_a_post_that_changes_nothing_is_three_statements_on_psycopg(
    direct_referee: Referee,
) -> None:
    referee = direct_referee
    await open_room(referee)
    before = await referee.rows()
    for i in range(3):
        through_engine, on_psycopg = await referee.handled(
            PERSON, **post(f"hello {i}", addressed_to=[HARNESS])
        )
        assert through_engine == []
        assert on_psycopg == [
            consumer.LOCK_CHECKPOINT_DIRECT,
            rooms.ROOM_EVENTS_DIRECT,
            consumer.SAVE_CHECKPOINT_DIRECT,
        ]
    after = await referee.rows()
    assert after == {**before, "checkpoint": referee.seq}
    assert referee.answers.appended == []
    # An event already caught up (a redelivery): the checkpoint locked, nothing more.
    referee.direct.sent.clear()
    await referee.handle(referee.ws, referee.seq - 1)
    assert referee.direct.sent == [consumer.LOCK_CHECKPOINT_DIRECT]
    assert await referee.rows() == after


async def test_rooms_not_kept_at_the_checkpoint_s_version_are_read_on_the_engine(
    direct_referee: Referee,
) -> None:
    referee = direct_referee
    # The first look knows no room: undone on psycopg, done on the engine.
    through_engine, on_psycopg = await referee.handled(
        PERSON, type="space.created", space_id=ROOM, kind="group", members=[HARNESS]
    )
    assert on_psycopg[:2] == [consumer.LOCK_CHECKPOINT_DIRECT, rooms.ROOM_EVENTS_DIRECT]
    assert consumer.SAVE_CHECKPOINT_DIRECT not in on_psycopg
    assert any(s.startswith("SELECT referee_rooms.space_id") for s in through_engine)
    # Another writer of the checkpoint's row (a second replica, the clock's look): what
    # is kept no longer holds, and the rooms are read again, on the engine.
    async with referee.engine.begin() as conn:
        await conn.execute(consumer.TOUCH_CHECKPOINT, {"ws": referee.ws})
    through_engine, _ = await referee.handled(PERSON, **post("again", addressed_to=[HARNESS]))
    assert any(s.startswith("SELECT referee_rooms.space_id") for s in through_engine)
    # And kept again from then on.
    through_engine, _ = await referee.handled(PERSON, **post("and on", addressed_to=[HARNESS]))
    assert through_engine == []


# What happens in a room of two agents, one event at a time: a turn begins and is heard
# from (told who works), usage (a job weighed, on the engine), the turn ends (told idle),
# people and the harness talk, a second room is made and erased.
SCRIPT: list[tuple[str, dict[str, Any]]] = [
    (
        PERSON,
        {"type": "space.created", "space_id": ROOM, "kind": "group", "members": [HARNESS, SECOND]},
    ),
    (PERSON, post("can you look?", addressed_to=[HARNESS])),
    (HARNESS, {"type": "run.started", "space_id": ROOM, "run_id": "run_1", "goal": "look"}),
    (HARNESS, {"type": "step.log", "space_id": ROOM, "run_id": "run_1", "title": "Reading"}),
    (PERSON, post("thanks", addressed_to=[HARNESS])),
    (HARNESS, {"type": "usage", "space_id": ROOM, "run_id": "run_1", "cost_usd": 0.01}),
    (HARNESS, {"type": "run.completed", "space_id": ROOM, "run_id": "run_1"}),
    (HARNESS, post("found it", addressed_to=[PERSON])),
    (PERSON, {"type": "space.created", "space_id": OTHER, "kind": "group", "members": []}),
    (PERSON, post("hello", space_id=OTHER, addressed_to=[])),
    (PERSON, {"type": "space.erased", "space_id": OTHER}),
    (PERSON, post("and now", addressed_to=[HARNESS])),
]


async def test_the_same_events_either_way_leave_the_same_rows_and_appends(
    engine: AsyncEngine,
) -> None:
    on_engine, on_direct = Referee(engine, "engine"), Referee(engine, "direct")
    on_direct.t0 = on_engine.t0  # the same moments, so the same due_at
    went_direct = []
    try:
        for actor, body in SCRIPT:
            await on_engine.handled(actor, **body)
            through_engine, on_psycopg = await on_direct.handled(actor, **body)
            if consumer.SAVE_CHECKPOINT_DIRECT in on_psycopg:
                assert through_engine == []
                went_direct.append(body["type"])
            assert await on_direct.rows() == await on_engine.rows(), body
            assert on_direct.answers.appended == on_engine.answers.appended, body
    finally:
        await on_direct.direct.close()
        await on_engine.direct.close()
    assert [key for key, _ in on_engine.answers.appended] == [
        told_key("spc_room", 3, ["run_1"]),
        told_key("spc_room", 4, ["run_1"]),
        "room:spc_room:7:-",
    ]
    # Everything but the rooms' first looks and the usage went on psycopg, room rows
    # written (the turn) and erased (the other room) included.
    assert went_direct == [
        "message.post",
        "run.started",
        "step.log",
        "message.post",
        "run.completed",
        "message.post",
        "message.post",
        "space.erased",
        "message.post",
    ]
