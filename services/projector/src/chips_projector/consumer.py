"""Folding committed events into the read models, checkpoint in the same transaction.

The loop is the search index's (docs/adr/0067, docs/adr/0106): each fetched batch of
``CHIPS_EVENTS`` is one transaction for all its workspaces. It locks their checkpoints and
reads what follows them from the log in Postgres in one statement, applies each event in
seq order under a span of the trace it was appended under, and writes the posts, their
rooms and the checkpoints together. A message is only a prompt: what is folded is read
from the log, so a lost or reordered message heals itself.

The common batch, posts alone, is folded as search folds its posts: two autocommit
statements on psycopg and no lock, the checkpoint moved in the statement that writes the
posts only if nobody moved it meanwhile (``unlocked.py``, docs/adr/0162).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common import otel
from chips_common.db.direct import Conn, Direct
from chips_common.db.retry import once_more
from chips_common.events.wire import EventJson
from chips_common.service.consumer import BatchHandler
from chips_common.service.fold import Applied, applying, pages_of_many
from chips_common.service.poison import set_aside
from chips_projector import store, unlocked

tracer = otel.tracer("chips.projector")

# How many events of a workspace one read brings.
PAGE = 1000


def may_wait(event: Mapping[str, Any]) -> bool:
    """Whether folding ``event`` may wait to be folded with the workspace's next events
    (docs/adr/0168; ``chips_common.service.held``). Pure.

    True of a post: what its fold writes (the post's row, its room's count and last seq)
    is read by a read that waits for its seq, and asks for it (``after_seq``, or the
    log's head), or by one that takes the read models as they are. Nothing the projector
    decides for another service reads it.
    """
    return event.get("type") == "message.post"


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
    with Applied(tracer, "projector.apply") as applied:
        for event, traceparent in page:
            if set_aside(event):  # dead-lettered: read past (docs/adr/0148)
                continue
            with applying(applied, event, traceparent):
                await fold.apply(event)


async def apply_until(conn: AsyncConnection, workspace_id: str, upto: int | None) -> int:
    """Apply every event of one workspace after the checkpoint up to ``upto`` (the head
    when None)."""
    return (await apply_batch(conn, {workspace_id: upto}))[workspace_id]


async def fold_posts(conn: Conn, upto: Mapping[str, int | None]) -> tuple[dict[str, int], set[str]]:
    """:func:`apply_batch` for the workspaces whose next page is posts alone, on an
    autocommit psycopg connection (docs/adr/0120), in two statements and no lock
    (``unlocked``, docs/adr/0162). Returns the checkpoints reached and the workspaces left
    to the locked fold: a page with more than posts, a full page, no checkpoint row yet,
    or a checkpoint moved meanwhile."""
    read = await unlocked.read(conn, upto, PAGE)
    by_workspace: dict[str, list[tuple[EventJson, str | None]]] = {}
    for event, traceparent in read.events:
        by_workspace.setdefault(event["workspace_id"], []).append((event, traceparent))
    reached = {w: seq for w, seq in read.checkpoints.items() if w not in by_workspace}
    locked = {
        w
        for w, page in by_workspace.items()
        if w in read.absent or len(page) == PAGE or not store.posts_only(page)
    }
    fold = store.Fold(conn)
    moves: dict[str, tuple[int, int]] = {}
    for w, page in by_workspace.items():
        if w not in locked:
            await apply_page(fold, page)
            moves[w] = (read.checkpoints[w], page[-1][0]["seq"])
    if moves:
        moved = await unlocked.posts_if_still(conn, fold.posts, moves)
        reached.update({w: moves[w][1] for w in moved})
        locked.update(set(moves) - moved)
    return reached, locked


def build_handler(engine: AsyncEngine, direct: Direct | None = None) -> BatchHandler:
    """The batch handler; with ``direct``, the workspaces whose pages are posts alone are
    folded on psycopg itself, without a lock (``fold_posts``), and the rest on the engine."""
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

        async def posts(conn: Conn) -> tuple[dict[str, int], set[str]]:
            return await fold_posts(conn, dict.fromkeys(wanted))

        if direct is not None:  # a broken connection: once more on a new one
            reached, rest = await direct.run(posts)
            applied.update(reached)
            if not rest:
                return
            wanted = {w: seq for w, seq in wanted.items() if w in rest}
        applied.update(await once_more(engine, fold))

    return handle
