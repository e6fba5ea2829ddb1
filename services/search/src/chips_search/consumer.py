"""Folding committed events into the search index, checkpoint in the same transaction.

The same loop as the projector's, shared (``chips_common.service.fold``; docs/architecture/design.md
§2, §5): a ``CHIPS_EVENTS`` message is only a prompt; the handler reads every event after its
checkpoint from the log in Postgres, so a message JetStream lost or reordered is healed
from the log, and a redelivered one finds the checkpoint past it and does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from sqlalchemy import func, literal_column, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common import otel
from chips_common.db import tables as t
from chips_common.db.direct import Conn, Direct, compiled
from chips_common.db.retry import once_more
from chips_common.db.search_tables import search_checkpoints
from chips_common.events.wire import EventJson
from chips_common.service.consumer import BatchHandler
from chips_common.service.fold import Applied, applying, pages_of_many
from chips_common.service.poison import set_aside
from chips_search import pages, store

log = logging.getLogger(__name__)
tracer = otel.tracer("chips.search")

# The event types the index folds; the rest only move the checkpoint.
INDEXED = frozenset({"message.post", *store.APPLY})


# How many events of a workspace one read brings.
PAGE = 1000


def may_wait(event: Mapping[str, Any]) -> bool:
    """Whether folding ``event`` may wait to be folded with the workspace's next events
    (docs/adr/0168; ``chips_common.service.held``). Pure: true of every event, since
    every search waits for the log's head (or the seq it is asked as of) and asks for its
    workspace while it waits."""
    return True


async def apply_batch(conn: AsyncConnection, upto: Mapping[str, int | None]) -> dict[str, int]:
    """Index every event of each workspace after its checkpoint up to its ``upto`` (its head
    when None), and save the checkpoints. A few statements whatever the number of
    workspaces and events: lock the checkpoints and read the first page, then write every
    post and every checkpoint (an edit, a step, a thread or an erasure is its own
    statement, in the order of the log). Returns the checkpoints reached."""
    index = store.Index(conn)
    first = await pages.lock_and_read(index, upto, PAGE)
    reached = dict(first.checkpoints)
    await apply_page(index, first.events)
    counts: dict[str, int] = {}
    for event, _ in first.events:
        reached[event["workspace_id"]] = event["seq"]
        counts[event["workspace_id"]] = counts.get(event["workspace_id"], 0) + 1
    # A workspace with a full page may have more.
    more = {w: reached[w] for w, n in counts.items() if n == PAGE}
    async for page in pages_of_many(conn, more, upto, PAGE):
        await index.know_rooms(event for event, _ in page)
        await apply_page(index, page)
    reached.update(more)
    await index.flush_and_save(
        {w: seq for w, seq in reached.items() if seq != first.checkpoints[w]}
    )
    return reached


async def apply_page(index: store.Index, page: list[tuple[EventJson, str | None]]) -> None:
    with Applied(tracer, "search.apply") as applied:
        for event, traceparent in page:
            if event["type"] in INDEXED and not set_aside(event):
                with applying(applied, event, traceparent):
                    await index.apply(event)


async def apply_until(conn: AsyncConnection, workspace_id: str, upto: int | None) -> int:
    """Index every event of one workspace after the checkpoint up to ``upto`` (the head
    when None)."""
    return (await apply_batch(conn, {workspace_id: upto}))[workspace_id]


async def fold_posts(
    conn: AsyncConnection, upto: Mapping[str, int | None]
) -> tuple[dict[str, int], set[str]]:
    """Index the workspaces whose next page is posts alone (and the events that only move
    the checkpoint) in two autocommit statements, without a lock: read each checkpoint and
    the page after it, then write every post and move every checkpoint still at what was
    read (docs/adr/0110). Returns the checkpoints reached and the workspaces left to the
    locked fold (``apply_batch``): those with an edit, a step, a thread or an erasure, a
    full page, or whose checkpoint moved meanwhile."""
    conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
    index = store.Index(conn)

    async def read() -> pages.Read:
        return await pages.read_unlocked(index, upto, PAGE)

    async def write(moves: Mapping[str, tuple[int, int]], absent: set[str]) -> set[str]:
        return await pages.write_if_still(index, moves, absent)

    return await _fold_posts(index, read, write)


async def fold_posts_direct(
    conn: Conn, upto: Mapping[str, int | None]
) -> tuple[dict[str, int], set[str]]:
    """:func:`fold_posts` on an autocommit psycopg connection of ``Direct``: the same two
    statements without SQLAlchemy's layers (docs/adr/0120)."""
    posts = store.Posts()

    async def read() -> pages.Read:
        return await pages.read_unlocked_direct(conn, posts, upto, PAGE)

    async def write(moves: Mapping[str, tuple[int, int]], absent: set[str]) -> set[str]:
        return await pages.write_if_still_direct(conn, posts, moves, absent)

    return await _fold_posts(posts, read, write)


async def _fold_posts(
    posts: store.Posts,
    read_unlocked: Callable[[], Awaitable[pages.Read]],
    write_if_still: Callable[[Mapping[str, tuple[int, int]], set[str]], Awaitable[set[str]]],
) -> tuple[dict[str, int], set[str]]:
    read = await read_unlocked()
    by_workspace: dict[str, list[tuple[EventJson, str | None]]] = {}
    for event, traceparent in read.events:
        by_workspace.setdefault(event["workspace_id"], []).append((event, traceparent))
    reached = {w: seq for w, seq in read.checkpoints.items() if w not in by_workspace}
    locked = {
        w
        for w, page in by_workspace.items()
        if len(page) == PAGE or any(event["type"] in store.APPLY for event, _ in page)
    }
    moves: dict[str, tuple[int, int]] = {}
    with Applied(tracer, "search.apply") as applied:
        for w, page in by_workspace.items():
            if w in locked:
                continue
            for event, traceparent in page:
                if event["type"] == "message.post" and not set_aside(event):
                    with applying(applied, event, traceparent):
                        await store.apply_message_post(posts, event)
            moves[w] = (read.checkpoints[w], page[-1][0]["seq"])
    if moves:
        moved = await write_if_still(moves, read.absent)
        reached.update({w: moves[w][1] for w in moved})
        locked.update(set(moves) - moved)
    return reached, locked


def build_handler(engine: AsyncEngine, direct: Direct | None = None) -> BatchHandler:
    """The handler of each fetched batch's workspaces. Posts alone go on ``direct`` when
    given (docs/adr/0120), else on ``engine``; the locked fold is always on ``engine``."""
    # What this process has committed, per workspace: a message at or below it has been
    # indexed already (the checkpoint only moves on), so it costs no transaction.
    indexed: dict[str, int] = {}

    async def handle(highest: Mapping[str, int]) -> None:
        wanted = {w: seq for w, seq in highest.items() if not seq or seq > indexed.get(w, 0)}
        if not wanted:
            return

        # Up to the head, not only to ``seq``: what the log holds past the message is
        # committed (seqs of a workspace commit in order), so it is indexed without
        # waiting for its own message, which then finds the checkpoint past it. Posts
        # alone in two autocommit statements for every workspace of the batch; what else
        # there is, every such workspace in one locked transaction.
        async def posts(conn: AsyncConnection) -> tuple[dict[str, int], set[str]]:
            return await fold_posts(conn, dict.fromkeys(wanted))

        async def posts_direct(conn: Conn) -> tuple[dict[str, int], set[str]]:
            return await fold_posts_direct(conn, dict.fromkeys(wanted))

        if direct is not None:  # a broken connection: once more on a new one, as once_more
            reached, rest = await direct.run(posts_direct)
        else:
            reached, rest = await once_more(engine, posts)
        indexed.update(reached)
        if not rest:
            return

        async def fold(conn: AsyncConnection) -> dict[str, int]:
            async with conn.begin():
                return await apply_batch(conn, dict.fromkeys(rest))

        indexed.update(await once_more(engine, fold))

    return handle


_c = search_checkpoints.c
BEHIND = (
    select(
        t.workspaces.c.id,
        t.workspaces.c.head_seq,
        func.coalesce(_c.seq, literal_column("0")).label("seq"),
    )
    .select_from(t.workspaces.outerjoin(search_checkpoints, _c.workspace_id == t.workspaces.c.id))
    .where(t.workspaces.c.head_seq > func.coalesce(_c.seq, literal_column("0")))
)
# The sweep's one statement on psycopg itself, when it has a Direct (docs/adr/0166).
BEHIND_DIRECT = compiled(BEHIND)


async def behind(engine: AsyncEngine, direct: Direct | None = None) -> dict[str, tuple[int, int]]:
    """The workspaces whose head is past the index's checkpoint: their head and checkpoint."""
    if direct is not None:

        async def one(conn: Conn) -> dict[str, tuple[int, int]]:
            rows = await (await conn.execute(BEHIND_DIRECT)).fetchall()
            return {row.id: (int(row.head_seq), int(row.seq)) for row in rows}

        return await direct.run(one)
    async with engine.connect() as conn:
        return {row.id: (int(row.head_seq), int(row.seq)) for row in await conn.execute(BEHIND)}


async def sweep(
    engine: AsyncEngine, stop: asyncio.Event, every: float, direct: Direct | None = None
) -> None:
    """Catch up any workspace the stream left behind (its last message lost or delayed).

    A lost message in the middle is healed by the next one; one lost at the tail has no
    next one, so the log's heads are compared with the checkpoints every ``every`` seconds.
    A workspace is caught up when its checkpoint is still short of the head it had at the
    comparison before: under load most workspaces are behind by what is in flight at any
    instant, and folding them here too would only make the consumer wait for the sweep's
    locks (a while later, their messages have done it).
    """
    handle = build_handler(engine, direct)
    heads: dict[str, int] = {}
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
        try:
            now = await behind(engine, direct)
            late = [w for w, (_, checkpoint) in now.items() if checkpoint < heads.get(w, 0)]
            heads = {w: head for w, (head, _) in now.items()}
            if late:
                await handle(dict.fromkeys(late, 0))
        except Exception:
            log.exception("the search sweep failed; it runs again in %.1fs", every)
