"""The referee's clock for each room: who is working, and the lead hand-off
(spec/websocket.md, Who leads, and who is working; docs/adr/0090).

It folds each room's events with ``chips_common.rules.lead`` into a row of
``referee_rooms`` (the ``Room`` and when the next thing is due there), in the transaction
that moves its checkpoint. Whenever a room's counted turns change it says so
(``room.working`` / ``room.idle``); when a room's ``due_at`` comes it looks again, as of
then: a turn fallen silent is told, and words nobody took are handed to the lead
(``lead.handed``). Each append's key is made of what it tells (the room, the change's
seq and the turns; the message handed), so a crash, a restart or a second replica deciding
the same again is answered ``duplicate`` and logs nothing twice.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db import tables as t
from chips_common.db.referee_tables import referee_rooms
from chips_common.events import canonical
from chips_common.rules.lead import (
    Room,
    facts,
    fold,
    forget_silent,
    handoff_at,
    next_silence,
)
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


async def read_room_events(
    conn: AsyncConnection, workspace_id: str, after: int, upto: int
) -> dict[str, list[dict[str, Any]]]:
    """The workspace's events in rooms from ``after`` (exclusive) to ``upto``, by room."""
    e = t.events.c
    rows = await conn.execute(
        select(e.space_id, e.body)
        .where(
            and_(
                e.workspace_id == workspace_id,
                e.seq > after,
                e.seq <= upto,
                e.space_id.is_not(None),
            )
        )
        .order_by(e.seq)
    )
    found: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        found.setdefault(row.space_id, []).append(canonical(row.body))
    return found


async def load_rooms(
    conn: AsyncConnection, workspace_id: str, space_ids: Iterable[str]
) -> dict[str, Room]:
    r = referee_rooms.c
    rows = await conn.execute(
        select(r.space_id, r.body)
        .where(and_(r.workspace_id == workspace_id, r.space_id.in_(sorted(space_ids))))
        .with_for_update()
    )
    return {row.space_id: Room.from_json(row.body) for row in rows}


async def save_room(
    conn: AsyncConnection, workspace_id: str, space_id: str, room: Room, clock: Clock
) -> None:
    """Keep the room (without turns long silent) and when the next thing is due there."""
    now = now_utc()
    room = forget_silent(room, now, clock.silent + clock.quiet)
    due = due_at(room, now, clock)
    stmt = pg_insert(referee_rooms).values(
        workspace_id=workspace_id, space_id=space_id, body=room.to_json(), due_at=due
    )
    await conn.execute(
        stmt.on_conflict_do_update(
            index_elements=["workspace_id", "space_id"],
            set_={"body": stmt.excluded.body, "due_at": stmt.excluded.due_at},
        )
    )


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
) -> None:
    """Fold the rooms' events from ``after`` to ``upto`` and tell any change in who works,
    a chunk of the log at a time (the first look at a long log reads it all)."""
    for lo in range(after, upto, CHUNK):
        await fold_chunk(conn, appender, workspace_id, lo, min(lo + CHUNK, upto), clock)


async def fold_chunk(
    conn: AsyncConnection,
    appender: Appender,
    workspace_id: str,
    after: int,
    upto: int,
    clock: Clock,
) -> None:
    by_room = await read_room_events(conn, workspace_id, after, upto)
    if not by_room:
        return
    rooms = await load_rooms(conn, workspace_id, by_room)
    r = referee_rooms.c
    for space_id, events in sorted(by_room.items()):
        if any(e["type"] == "space.erased" for e in events):
            await conn.execute(
                delete(referee_rooms).where(
                    and_(r.workspace_id == workspace_id, r.space_id == space_id)
                )
            )
            continue
        room = rooms.get(space_id) or Room()
        for event in events:
            room = fold(room, event)
        room = await tell_working(appender, workspace_id, space_id, room, now_utc(), clock)
        await save_room(conn, workspace_id, space_id, room, clock)


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
    going = ",".join(r.split(" ", 1)[0] for r in runs) or "-"
    key = f"room:{space_id}:{room.changed}:{going}"
    answer = await appender.append(workspace_id, key, [{**body, "space_id": space_id}])
    if not answer.ok:
        log.warning("the referee's %s was refused: %s %s", key, answer.code, answer.message)
    return replace(room, told=runs)


async def look_again(
    conn: AsyncConnection, appender: Appender, workspace_id: str, clock: Clock
) -> None:
    """Each room of the workspace whose moment has come, as of now: tell a turn fallen
    silent, and hand the lead the words nobody took."""
    r = referee_rooms.c
    now = now_utc()
    rows = await conn.execute(
        select(r.space_id, r.body)
        .where(and_(r.workspace_id == workspace_id, r.due_at <= now))
        .with_for_update(skip_locked=True)
    )
    for row in rows.all():
        room = Room.from_json(row.body)
        room = await tell_working(appender, workspace_id, row.space_id, room, now, clock)
        room = await hand_off(appender, workspace_id, row.space_id, room, now, clock)
        await save_room(conn, workspace_id, row.space_id, room, clock)


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
