"""The referee's clock for each room: who is working, and the lead hand-off
(docs/product/websocket.md, Who leads, and who is working; docs/adr/0090).

It folds each room's events with ``chips_common.rules.lead`` into a row of
``referee_rooms`` (the ``Room`` and when the next thing is due there), in the transaction
that moves its checkpoint. Whenever a room's counted turns change it says so
(``room.working`` / ``room.idle``); when a room's ``due_at`` comes it looks again, as of
then: a turn fallen silent is told, and words nobody took are handed to the lead
(``lead.handed``). Each append's key is made of what it tells (the room, the change's
seq and a digest of the turns; the message handed), so a crash, a restart or a second
replica deciding the same again is answered ``duplicate`` and logs nothing twice.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from psycopg.types.json import Jsonb
from sqlalchemy import and_, bindparam, delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db import tables as t
from chips_common.db.direct import Conn, compiled
from chips_common.db.referee_tables import referee_rooms
from chips_common.events.wire import EventJson, canonical_event
from chips_common.rules.lead import (
    Room,
    facts,
    fold,
    forget_silent,
    handoff_at,
    next_silence,
    told_key,
)
from chips_common.rules.lead_json import RoomRow
from chips_common.service.poison import folding, set_aside
from chips_referee.appender import Appender

log = logging.getLogger(__name__)

# Events read from the log at a time, catching a workspace up.
CHUNK = 2000


@dataclass(frozen=True)
class Clock:
    """The referee's numbers: the quiet spell before a hand-off and the silence after
    which a turn is not counted (seconds)."""

    quiet: float
    silent: float


def now_utc() -> datetime:
    return datetime.now(UTC)


# The statements of every event, built once: one built per call costs more CPU (its
# cache key walks its values) than Postgres spends running it.
_e = t.events.c
_r = referee_rooms.c
ROOM_EVENTS = (
    select(_e.space_id, _e.type, _e.body)
    .where(
        and_(
            _e.workspace_id == bindparam("workspace_id"),
            _e.seq > bindparam("after"),
            _e.seq <= bindparam("upto"),
            _e.space_id.is_not(None),
        )
    )
    .order_by(_e.seq)
)
LOAD_ROOMS = (
    select(_r.space_id, _r.body, _r.due_at)
    .where(
        and_(
            _r.workspace_id == bindparam("workspace_id"),
            _r.space_id.in_(bindparam("space_ids", expanding=True)),
        )
    )
    .with_for_update()
)
_upsert = pg_insert(referee_rooms).values(
    workspace_id=bindparam("workspace_id"),
    space_id=bindparam("space_id"),
    body=bindparam("body", type_=referee_rooms.c.body.type),
    due_at=bindparam("due_at", type_=referee_rooms.c.due_at.type),
)
SAVE_ROOM = _upsert.on_conflict_do_update(
    index_elements=["workspace_id", "space_id"],
    set_={"body": _upsert.excluded.body, "due_at": _upsert.excluded.due_at},
)
DELETE_ROOM = delete(referee_rooms).where(
    and_(_r.workspace_id == bindparam("workspace_id"), _r.space_id == bindparam("space_id"))
)
DUE_ROOMS = (
    select(_r.space_id, _r.body, _r.due_at)
    .where(and_(_r.workspace_id == bindparam("workspace_id"), _r.due_at <= bindparam("now")))
    .with_for_update(skip_locked=True)
)
# The same statements for psycopg itself, on the handler's common case (docs/adr/0120).
ROOM_EVENTS_DIRECT = compiled(ROOM_EVENTS)
SAVE_ROOM_DIRECT = compiled(SAVE_ROOM)
DELETE_ROOM_DIRECT = compiled(DELETE_ROOM)


@dataclass
class RoomEvents:
    """A stretch of a workspace's log in rooms: each room's events in seq order, and the
    rooms with usage among them (whose jobs are weighed after)."""

    by_room: dict[str, list[EventJson]]
    spent_in: set[str]


@dataclass(frozen=True)
class Kept:
    """A room as its row holds it: what to fold on, and the row's own values, so that a
    room its events left as it was is not written again."""

    room: Room
    body: RoomRow
    due_at: datetime | None


class RoomRows(Protocol):
    """Where a fold writes the rooms' rows: a connection of SQLAlchemy's, or of psycopg's
    itself for the handler's common case (docs/adr/0120). The statements are the same."""

    async def save_room(
        self, workspace_id: str, space_id: str, body: RoomRow, due: datetime | None
    ) -> None: ...

    async def delete_room(self, workspace_id: str, space_id: str) -> None: ...


@dataclass(frozen=True)
class EngineRows:
    conn: AsyncConnection

    async def save_room(
        self, workspace_id: str, space_id: str, body: RoomRow, due: datetime | None
    ) -> None:
        await self.conn.execute(
            SAVE_ROOM,
            {"workspace_id": workspace_id, "space_id": space_id, "body": body, "due_at": due},
        )

    async def delete_room(self, workspace_id: str, space_id: str) -> None:
        await self.conn.execute(DELETE_ROOM, {"workspace_id": workspace_id, "space_id": space_id})


@dataclass(frozen=True)
class DirectRows:
    conn: Conn

    async def save_room(
        self, workspace_id: str, space_id: str, body: RoomRow, due: datetime | None
    ) -> None:
        # As SQLAlchemy binds a JSONB on psycopg: the body wrapped as Jsonb.
        await self.conn.execute(
            SAVE_ROOM_DIRECT,
            {
                "workspace_id": workspace_id,
                "space_id": space_id,
                "body": Jsonb(body),
                "due_at": due,
            },
        )

    async def delete_room(self, workspace_id: str, space_id: str) -> None:
        await self.conn.execute(
            DELETE_ROOM_DIRECT, {"workspace_id": workspace_id, "space_id": space_id}
        )


def by_room(rows: Iterable[Any]) -> RoomEvents:
    """Rows of ``ROOM_EVENTS``, by room."""
    found = RoomEvents({}, set())
    for row in rows:
        event = canonical_event(row.body)
        if set_aside(event):  # dead-lettered: read past (docs/adr/0148)
            continue
        found.by_room.setdefault(row.space_id, []).append(event)
        if row.type == "usage":
            found.spent_in.add(row.space_id)
    return found


async def read_room_events(
    conn: AsyncConnection, workspace_id: str, after: int, upto: int
) -> RoomEvents:
    """The workspace's events in rooms from ``after`` (exclusive) to ``upto``, by room."""
    rows = await conn.execute(
        ROOM_EVENTS, {"workspace_id": workspace_id, "after": after, "upto": upto}
    )
    return by_room(rows)


async def read_room_events_direct(
    conn: Conn, workspace_id: str, after: int, upto: int
) -> RoomEvents:
    """:func:`read_room_events` on psycopg itself."""
    cursor = await conn.execute(
        ROOM_EVENTS_DIRECT, {"workspace_id": workspace_id, "after": after, "upto": upto}
    )
    return by_room(await cursor.fetchall())


async def load_rooms(
    conn: AsyncConnection, workspace_id: str, space_ids: Iterable[str]
) -> dict[str, Kept]:
    rows = await conn.execute(
        LOAD_ROOMS, {"workspace_id": workspace_id, "space_ids": sorted(space_ids)}
    )
    return {row.space_id: Kept(Room.from_json(row.body), row.body, row.due_at) for row in rows}


async def save_room(
    rows: RoomRows,
    workspace_id: str,
    space_id: str,
    room: Room,
    clock: Clock,
    kept: Kept | None = None,
) -> Kept:
    """Keep the room (without turns long silent) and when the next thing is due there;
    nothing is written when that is what its row (``kept``) already holds. What the row
    holds now."""
    now = now_utc()
    room = forget_silent(room, now, clock.silent + clock.quiet)
    due = due_at(room, now, clock)
    body = room.to_json()
    if kept is not None and kept.body == body and kept.due_at == due:
        return kept
    await rows.save_room(workspace_id, space_id, body, due)
    return Kept(room, body, due)


def due_at(room: Room, now: datetime, clock: Clock) -> datetime | None:
    """The next moment the room needs a look: a hand-off, or a counted turn falling silent."""
    moments = [
        m
        for m in (
            handoff_at(room, clock.quiet, clock.silent),
            next_silence(room, now, clock.silent),
        )
        if m is not None
    ]
    return min(moments) if moments else None


async def fold_rooms(
    conn: AsyncConnection,
    appender: Appender,
    workspace_id: str,
    after: int,
    upto: int,
    clock: Clock,
    rooms: dict[str, Kept | None],
) -> set[str]:
    """Fold the rooms' events from ``after`` to ``upto`` and tell any change in who works,
    a chunk of the log at a time (the first look at a long log reads it all); the rooms
    with usage among them.

    ``rooms``: what the rows of the rooms already read hold (None: no row), kept up to
    date as they are written; a room not in it is read from its row.
    """
    spent_in: set[str] = set()
    for lo in range(after, upto, CHUNK):
        spent_in |= await fold_chunk(
            conn, appender, workspace_id, lo, min(lo + CHUNK, upto), clock, rooms
        )
    return spent_in


async def fold_chunk(
    conn: AsyncConnection,
    appender: Appender,
    workspace_id: str,
    after: int,
    upto: int,
    clock: Clock,
    rooms: dict[str, Kept | None],
) -> set[str]:
    read = await read_room_events(conn, workspace_id, after, upto)
    if not read.by_room:
        return read.spent_in
    unread = [s for s in read.by_room if s not in rooms]
    if unread:
        found = await load_rooms(conn, workspace_id, unread)
        rooms.update({s: found.get(s) for s in unread})
    await fold_read(EngineRows(conn), appender, workspace_id, read, clock, rooms)
    return read.spent_in


async def fold_read(
    rows: RoomRows,
    appender: Appender,
    workspace_id: str,
    read: RoomEvents,
    clock: Clock,
    rooms: dict[str, Kept | None],
) -> None:
    """Fold each room's events read onto what its row holds (``rooms``, every room of
    ``read`` in it), tell any change in who works, and write the rows that changed."""
    for space_id, events in sorted(read.by_room.items()):
        if any(e["type"] == "space.erased" for e in events):
            await rows.delete_room(workspace_id, space_id)
            rooms[space_id] = None
            continue
        kept = rooms[space_id]
        room = kept.room if kept is not None else Room()
        for event in events:
            with folding(event):
                room = fold(room, event)
        room = await tell_working(appender, workspace_id, space_id, room, now_utc(), clock)
        rooms[space_id] = await save_room(rows, workspace_id, space_id, room, clock, kept)


async def tell_working(
    appender: Appender,
    workspace_id: str,
    space_id: str,
    room: Room,
    now: datetime,
    clock: Clock,
) -> Room:
    """Say who works in the room when that changed since the room was last told."""
    found = facts(room, now, clock.silent)
    if found is None:
        return room
    body, runs = found
    # Keyed by the change told of and the turns still counted (fewer once one falls silent).
    key = told_key(space_id, room.changed, runs)
    answer = await appender.append(workspace_id, key, [{**body, "space_id": space_id}])
    if not answer.ok:
        log.warning("the referee's %s was refused: %s %s", key, answer.code, answer.message)
    return replace(room, told=runs)


async def look_again(
    conn: AsyncConnection, appender: Appender, workspace_id: str, clock: Clock
) -> bool:
    """Each room of the workspace whose moment has come, as of now: tell a turn fallen
    silent, and hand the lead the words nobody took. Whether it wrote any room's row."""
    now = now_utc()
    rows = await conn.execute(DUE_ROOMS, {"workspace_id": workspace_id, "now": now})
    wrote = False
    for row in rows.all():
        kept = Kept(Room.from_json(row.body), row.body, row.due_at)
        room = await tell_working(appender, workspace_id, row.space_id, kept.room, now, clock)
        room = await hand_off(appender, workspace_id, row.space_id, room, now, clock)
        saved = await save_room(EngineRows(conn), workspace_id, row.space_id, room, clock, kept)
        wrote = wrote or saved is not kept
    return wrote


async def hand_off(
    appender: Appender,
    workspace_id: str,
    space_id: str,
    room: Room,
    now: datetime,
    clock: Clock,
) -> Room:
    """Hand the room's last words to its lead when nobody took them in the quiet spell."""
    when = handoff_at(room, clock.quiet, clock.silent)
    words = room.words
    if when is None or when > now or words is None or room.lead is None:
        return room
    key = f"lead:{words.message_id}"
    event = {
        "type": "lead.handed",
        "space_id": space_id,
        "message_id": words.message_id,
        "agent_id": room.lead,
        "said_by": words.sender,
        "quiet_seconds": round(clock.quiet),
    }
    answer = await appender.append(workspace_id, key, [event])
    if not answer.ok:
        # Refused at the door (the room paused meanwhile, the lead gone): not tried again.
        log.warning("the referee's %s was refused: %s %s", key, answer.code, answer.message)
    return replace(room, handed=words.message_id)
