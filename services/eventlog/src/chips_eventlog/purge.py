"""Purging an erased space's copies from ``CHIPS_EVENTS`` (docs/adr/0010).

The door deletes an erased space's events from Postgres in the transaction that logs
``space.erased``; the copies already fanned out through ``CHIPS_EVENTS`` are removed
here, after the commit. Once the ``space.erased`` itself is in the stream (its publish
ack gives its stream sequence), the workspace's subject is purged below that sequence:
every earlier copy of every event of the workspace goes, the erased room's among them,
however many times the outbox re-published one. Postgres is the log of record and every
consumer reads the log, so nothing but copies is lost.

Each erasure is written to ``erasures`` in the same transaction as the event and removed
only once the purge has answered, so a crash in between is made good by the sweeper.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from nats.js import JetStreamContext
from nats.js.api import PubAck
from sqlalchemy import and_, delete, select
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.db import tables as t
from chips_common.events import LoggedJson, canonical
from chips_common.nats.streams import HDR_MSG_ID, Names

log = logging.getLogger(__name__)


async def purge_below(
    js: JetStreamContext, names: Names, engine: AsyncEngine, event: LoggedJson, stream_seq: int
) -> None:
    """Purge the workspace's subject below the space.erased's stream sequence."""
    workspace_id = event["workspace_id"]
    await js.purge_stream(
        names.events_stream, subject=names.events_subject(workspace_id), seq=stream_seq
    )
    async with engine.begin() as conn:
        await conn.execute(
            delete(t.erasures).where(
                and_(t.erasures.c.workspace_id == workspace_id, t.erasures.c.seq == event["seq"])
            )
        )
    log.info("purged CHIPS_EVENTS of %s below stream seq %d", workspace_id, stream_seq)


async def after_publish(
    js: JetStreamContext,
    names: Names,
    engine: AsyncEngine,
    events: list[LoggedJson],
    results: list[Any],
) -> None:
    """For each space.erased just published, purge what came before it."""
    for event, result in zip(events, results, strict=True):
        if event["type"] == "space.erased" and isinstance(result, PubAck):
            try:
                await purge_below(js, names, engine, event, result.seq)
            except Exception:
                log.exception(
                    "purge after space.erased %s failed; the sweeper retries", event["seq"]
                )


async def sweep(js: JetStreamContext, names: Names, engine: AsyncEngine) -> int:
    """Finish erasures a crash left half done: publish the space.erased again (the stream
    answers a duplicate with the first copy's sequence) and purge below it."""
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                select(t.events.c.body).select_from(
                    t.erasures.join(
                        t.events,
                        and_(
                            t.erasures.c.workspace_id == t.events.c.workspace_id,
                            t.erasures.c.seq == t.events.c.seq,
                        ),
                    )
                )
            )
        ).all()
    for row in rows:
        event = canonical(row.body)
        ack = await js.publish(
            names.events_subject(event["workspace_id"]),
            json.dumps(event, separators=(",", ":")).encode(),
            headers={HDR_MSG_ID: event["id"]},
        )
        await purge_below(js, names, engine, event, ack.seq)
    return len(rows)
