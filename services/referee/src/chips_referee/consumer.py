"""What the referee does with committed events (DESIGN.md §6; docs/adr/0083).

It is prompted with a workspace and a seq, reads what it has not seen from the log, and
after each usage in a room weighs that room's job against its ceiling (``spend.py``). What
it decides it appends through the eventlog under deterministic keys; its checkpoint is
saved after the appends are answered, so a crash in between decides the same again and
logs nothing twice.
"""

from __future__ import annotations

import logging

from sqlalchemy import and_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.db import tables as t
from chips_common.db.referee_tables import referee_checkpoints
from chips_common.db.spend_reads import read_job
from chips_common.service.consumer import Handler
from chips_referee.appender import Appender
from chips_referee.spend import crossing_events

log = logging.getLogger(__name__)

# The events that prompt the accountant.
WANTED = frozenset({"usage"})


def build_handler(engine: AsyncEngine, appender: Appender) -> Handler:
    async def handle(workspace_id: str, seq: int) -> None:
        async with engine.begin() as conn:
            done = (
                await conn.execute(
                    select(referee_checkpoints.c.seq)
                    .where(referee_checkpoints.c.workspace_id == workspace_id)
                    .with_for_update()
                )
            ).scalar() or 0
            if done >= seq:
                return
            e = t.events.c
            rooms = (
                await conn.execute(
                    select(e.space_id)
                    .where(
                        and_(
                            e.workspace_id == workspace_id,
                            e.seq > done,
                            e.seq <= seq,
                            e.type.in_(WANTED),
                            e.space_id.is_not(None),
                        )
                    )
                    .group_by(e.space_id)
                )
            ).scalars()
            for space_id in sorted(rooms):
                # The job as it stands now: one a person has since ended is not weighed.
                read = await read_job(conn, workspace_id, space_id)
                crossing = crossing_events(space_id, read)
                if crossing is None:
                    continue
                key, events = crossing
                answer = await appender.append(workspace_id, key, events)
                if not answer.ok:
                    log.warning(
                        "the referee's %s in %s was refused: %s %s",
                        key,
                        workspace_id,
                        answer.code,
                        answer.message,
                    )
            stmt = pg_insert(referee_checkpoints).values(workspace_id=workspace_id, seq=seq)
            await conn.execute(
                stmt.on_conflict_do_update(index_elements=["workspace_id"], set_={"seq": seq})
            )

    return handle
