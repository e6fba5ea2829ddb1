"""Chips's clock for questions (ADR 0131): a question nobody answered by its
``expires_at`` is said to have expired, as ``question.expired`` by ``system``.

The door keeps each card in ``run_cards``; every tick this reads the questions still open
past their time and appends one event for each, under a key made of the question's id,
so a second replica or a restart deciding the same again logs nothing twice. The door
decides what expiring means (the card kept, marked expired, its default taken); a
question answered in the meantime is refused there, and not looked at again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.db import run_tables as rt
from chips_referee.appender import Appender, Unavailable

log = logging.getLogger(__name__)

# Questions expired at a time, oldest first.
BATCH = 100

_c = rt.run_cards.c
OVERDUE = (
    select(_c.workspace_id, _c.id)
    .where(
        and_(
            _c.kind == "question",
            _c.answered_by.is_(None),
            _c.expires_at <= func.now(),
        )
    )
    .order_by(_c.expires_at)
    .limit(BATCH)
)


def expiry_key(question_id: str) -> str:
    return f"question-expired:{question_id}"


def build_expiry_tick(
    engine: AsyncEngine, appender: Appender
) -> Callable[[], Coroutine[Any, Any, int]]:
    """One look for questions past their time; how many it said expired."""
    # Questions the door would not expire (a refusal is not tried again by this process).
    refused: set[tuple[str, str]] = set()

    async def tick() -> int:
        async with engine.connect() as conn:
            # Autocommit: a look that finds nothing costs no BEGIN and ROLLBACK.
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            rows = [(r.workspace_id, r.id) for r in await conn.execute(OVERDUE)]
        done = 0
        for workspace_id, question_id in rows:
            if (workspace_id, question_id) in refused:
                continue
            event = {"type": "question.expired", "question_id": question_id}
            try:
                answer = await appender.append(workspace_id, expiry_key(question_id), [event])
            except Unavailable:
                return done  # the log is busy: the next tick tries again
            if answer.ok:
                done += 1
            else:
                refused.add((workspace_id, question_id))
                log.info("question %s did not expire: %s", question_id, answer.message)
        return done

    return tick
