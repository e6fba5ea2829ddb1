"""Folding the log into a read model: the loop the projector and the search index share.

A consumer's handler (``chips_common.service.consumer``) is prompted with a workspace and
a seq; what it folds it reads from the log in Postgres, after its checkpoint, in pages,
in seq order, each event under a span of the trace it was appended under
(docs/architecture/design.md §2, §5). Its checkpoint is locked before and saved after, in the same
transaction, by the caller: each read model keeps its own checkpoint table.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterator, Mapping
from contextlib import contextmanager

from opentelemetry.trace import Tracer
from sqlalchemy import and_, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common import otel
from chips_common.db import tables as t
from chips_common.events.wire import EventJson, canonical_event
from chips_common.service.poison import folding, set_aside

Apply = Callable[[EventJson], Awaitable[None]]


async def events_traced(
    conn: AsyncConnection, workspace_id: str, after: int, upto: int | None, limit: int = 1000
) -> list[tuple[EventJson, str | None]]:
    """Events after ``after`` (up to ``upto``), each with the trace it was appended under."""
    query = select(t.events.c.body, t.events.c.traceparent).where(
        and_(t.events.c.workspace_id == workspace_id, t.events.c.seq > after)
    )
    if upto is not None:
        query = query.where(t.events.c.seq <= upto)
    rows = await conn.execute(query.order_by(t.events.c.seq).limit(limit))
    return [(canonical_event(row.body), row.traceparent) for row in rows]


async def fold_events(
    conn: AsyncConnection,
    workspace_id: str,
    checkpoint: int,
    upto: int | None,
    apply: Apply,
    *,
    tracer: Tracer,
    span: str,
    wanted: Collection[str] | None = None,
) -> int:
    """Apply every event after ``checkpoint`` up to ``upto`` (the head when None).

    Only the types in ``wanted`` are applied when it is given; the rest are read past.
    Returns the seq reached: the new checkpoint, for the caller to save.
    """
    while upto is None or checkpoint < upto:
        batch = await events_traced(conn, workspace_id, checkpoint, upto)
        if not batch:
            break
        for event, traceparent in batch:
            if wanted is not None and event["type"] not in wanted:
                continue
            if set_aside(event):
                continue
            with applying(tracer, span, event, traceparent):
                await apply(event)
        checkpoint = batch[-1][0]["seq"]
    return checkpoint


@contextmanager
def applying(
    tracer: Tracer, span: str, event: EventJson, traceparent: str | None
) -> Iterator[None]:
    """A span for applying one event, in the trace of the append that logged it; what
    the event's fold raises is raised as ``FoldFailed``, naming it (``poison.folding``).
    The caller reads past an event ``set_aside`` says was dead-lettered."""
    attributes: dict[str, str | int] = {
        otel.WORKSPACE_ID: event["workspace_id"],
        otel.SEQ: event["seq"],
        otel.EVENT_TYPE: event["type"],
    }
    if "message_id" in event:
        attributes[otel.MESSAGE_ID] = event["message_id"]
    with (
        tracer.start_as_current_span(
            span, context=otel.from_traceparent(traceparent), attributes=attributes
        ),
        folding(event),
    ):
        yield


# Every workspace's next page in one statement: a LATERAL read of each one's own rows.
_PAGES = text(
    "SELECT e.body, e.traceparent"
    " FROM unnest(CAST(:workspaces AS text[]), CAST(:after AS bigint[]),"
    " CAST(:upto AS bigint[])) AS c(workspace_id, after, upto)"
    " CROSS JOIN LATERAL (SELECT body, traceparent, seq FROM events"
    " WHERE workspace_id = c.workspace_id AND seq > c.after AND seq <= c.upto"
    " ORDER BY seq LIMIT :limit) AS e"
    " ORDER BY c.workspace_id, e.seq"
)
_NO_END = 2**63 - 1


async def pages_of_many(
    conn: AsyncConnection,
    reached: dict[str, int],
    upto: Mapping[str, int | None],
    limit: int = 1000,
) -> AsyncIterator[list[tuple[EventJson, str | None]]]:
    """The events of several workspaces after ``reached`` (each up to its ``upto``, the
    head when None), a page of at most ``limit`` per workspace at a time, all the pages in
    one statement: each workspace's events in seq order, with their traces.

    ``reached`` is moved on past each page as it is handed out: when the pages are done,
    it holds every workspace's new checkpoint.
    """
    going = sorted(w for w in reached if upto.get(w) is None or reached[w] < (upto[w] or 0))
    while going:
        rows = await conn.execute(
            _PAGES,
            {
                "workspaces": going,
                "after": [reached[w] for w in going],
                "upto": [_NO_END if upto.get(w) is None else upto[w] for w in going],
                "limit": limit,
            },
        )
        page = [(canonical_event(row.body), row.traceparent) for row in rows]
        if not page:
            return
        counts: dict[str, int] = {}
        for event, _ in page:
            counts[event["workspace_id"]] = counts.get(event["workspace_id"], 0) + 1
            reached[event["workspace_id"]] = event["seq"]
        yield page
        # A workspace with a full page may have more; the others are done.
        going = [w for w in going if counts.get(w, 0) == limit]
