"""Folding committed events into the read models, checkpoint in the same transaction.

The loop is the search index's (docs/adr/0067, docs/adr/0106): each fetched batch of
``CHIPS_EVENTS`` is one transaction for all its workspaces. It locks their checkpoints and
reads what follows them from the log in Postgres in one statement, applies each event in
seq order under a span of the trace it was appended under, and writes the posts, their
rooms and the checkpoints together. A message is only a prompt: what is folded is read
from the log, so a lost or reordered message heals itself.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common import otel
from chips_common.db.direct import Conn, Direct
from chips_common.db.retry import once_more
from chips_common.events.wire import EventJson
from chips_common.service.consumer import BatchHandler
from chips_common.service.fold import applying, pages_of_many
from chips_common.service.poison import set_aside
from chips_projector import store

tracer = otel.tracer("chips.projector")

# How many events of a workspace one read brings.
PAGE = 1000


async def apply_batch(conn: AsyncConnection, upto: Mapping[str, int | None]) -> dict[str, int]:
    """Apply every event of each workspace after its checkpoint up to its ``upto`` (its
    head when None), and save the checkpoints. Returns the checkpoints reached."""
    fold = store.Fold(conn)
    checkpoints, first = await store.lock_and_read(conn, upto, PAGE)
    reached = dict(checkpoints)
    await apply_page(fold, first)
    counts: dict[str, int] = {}
    for event, _ in first:
        reached[event["workspace_id"]] = event["seq"]
        counts[event["workspace_id"]] = counts.get(event["workspace_id"], 0) + 1
    # A workspace with a full page may have more.
    more = {w: reached[w] for w, n in counts.items() if n == PAGE}
    async for page in pages_of_many(conn, more, upto, PAGE):
        await apply_page(fold, page)
    reached.update(more)
    await fold.flush({w: seq for w, seq in reached.items() if seq != checkpoints[w]})
    return reached


async def apply_page(fold: store.Fold, page: list[tuple[EventJson, str | None]]) -> None:
    for event, traceparent in page:
        if set_aside(event):  # dead-lettered: read past (docs/adr/0148)
            continue
        with applying(tracer, "projector.apply", event, traceparent):
            await fold.apply(event)


async def apply_until(conn: AsyncConnection, workspace_id: str, upto: int | None) -> int:
    """Apply every event of one workspace after the checkpoint up to ``upto`` (the head
    when None)."""
    return (await apply_batch(conn, {workspace_id: upto}))[workspace_id]


class NotPostsOnly(Exception):
    """The batch holds more than posts: it is folded on the engine instead."""


async def fold_posts(conn: Conn, upto: Mapping[str, int | None]) -> dict[str, int]:
    """:func:`apply_batch` on a psycopg connection (docs/adr/0120), for a batch whose first
    page is all there is and holds nothing but posts (the common batch): lock and read,
    then write the posts and the checkpoints, in one transaction. Raises
    :class:`NotPostsOnly`, its transaction undone, for any other batch."""
    async with conn.transaction():
        checkpoints, first = await store.lock_and_read(conn, upto, PAGE)
        counts: dict[str, int] = {}
        for event, _ in first:
            counts[event["workspace_id"]] = counts.get(event["workspace_id"], 0) + 1
        if not store.posts_only(first) or PAGE in counts.values():
            raise NotPostsOnly
        fold = store.Fold(conn)
        await apply_page(fold, first)
        reached = dict(checkpoints)
        for event, _ in first:
            reached[event["workspace_id"]] = event["seq"]
        await fold.flush({w: seq for w, seq in reached.items() if seq != checkpoints[w]})
    return reached


def build_handler(engine: AsyncEngine, direct: Direct | None = None) -> BatchHandler:
    """The batch handler; with ``direct``, a batch of posts is folded on psycopg itself."""
    # What this process has committed, per workspace: a message at or below it has been
    # applied already (the checkpoint only moves on), so it costs no transaction.
    applied: dict[str, int] = {}

    async def handle(highest: Mapping[str, int]) -> None:
        wanted = {w: seq for w, seq in highest.items() if seq > applied.get(w, 0)}
        if not wanted:
            return

        # Up to the head, not only to the message's seq: what the log holds past it is
        # committed (a workspace's seqs commit in order), so it is applied now and its own
        # message then finds the checkpoint past it.
        async def fold(conn: AsyncConnection) -> dict[str, int]:
            async with conn.begin():
                return await apply_batch(conn, dict.fromkeys(wanted))

        async def posts(conn: Conn) -> dict[str, int]:
            return await fold_posts(conn, dict.fromkeys(wanted))

        if direct is not None:
            try:
                applied.update(await direct.run(posts))
                return
            except NotPostsOnly:
                pass
        applied.update(await once_more(engine, fold))

    return handle
