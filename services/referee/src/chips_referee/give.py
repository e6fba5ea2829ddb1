"""Rooms from before one agent per room, brought over in the log (docs/adr/0146).

Migrations 1700, 1720 and 1740 listed every workspace in ``agents_to_give``. On its clock the
referee sends each the door's ``agents.give`` as Chips, under one key per workspace (a
key is the credential's across workspaces: one key for all would answer the second
workspace with the first's answer, and give it nothing), and takes the row
out once the log answered (logged, nothing owed, or the same key answered before): the
door gives every harness owed an agent its agent in each room, and the read models follow
those events as they follow any. A log that did not answer leaves the row for the next look.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.db.referee_tables import agents_to_give
from chips_referee.appender import Appender, Unavailable

log = logging.getLogger(__name__)

# One key per workspace and migration: a second send after a crash is answered
# ``duplicate``; 1740's listing (harnesses before agents are given theirs too, ADR 0154)
# is sent afresh, whatever 1700's and 1720's were answered.
KEY = "agents-given-1740:{workspace_id}"
GIVE = {"command": "agents.give"}


def build_give_tick(
    engine: AsyncEngine, appender: Appender
) -> Callable[[], Coroutine[Any, Any, int]]:
    async def tick() -> int:
        async with engine.connect() as conn:
            # Autocommit: a look that finds nothing costs no BEGIN and ROLLBACK.
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            waiting = list((await conn.execute(select(agents_to_give.c.workspace_id))).scalars())
        done = 0
        for workspace_id in waiting:
            try:
                answer = await appender.append(
                    workspace_id, KEY.format(workspace_id=workspace_id), [GIVE]
                )
            except Unavailable:
                return done  # the next look tries again
            if not answer.ok and not answer.duplicate:
                log.warning(
                    "agents.give refused in %s: %s %s", workspace_id, answer.code, answer.message
                )
            async with engine.begin() as conn:
                await conn.execute(
                    delete(agents_to_give).where(agents_to_give.c.workspace_id == workspace_id)
                )
            done += 1
        return done

    return tick
