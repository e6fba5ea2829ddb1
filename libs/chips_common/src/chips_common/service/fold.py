"""Folding the log into a read model: the loop the projector and the search index share.

A consumer's handler (``chips_common.service.consumer``) is prompted with a workspace and
a seq; what it folds it reads from the log in Postgres, after its checkpoint, in pages,
in seq order; a page's events are traced by one ``<service>.apply`` span linked to the
append span each was logged under (:class:`Applied`, docs/adr/0170;
docs/architecture/design.md §2, §5). Its checkpoint is locked before and saved after, in the same
transaction, by the caller: each read model keeps its own checkpoint table.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterator, Mapping
from contextlib import contextmanager

from opentelemetry.trace import Link, Tracer
from opentelemetry.util.types import AttributeValue
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
        with Applied(tracer, span) as applied:
            for event, traceparent in batch:
                if wanted is not None and event["type"] not in wanted:
                    continue
                if set_aside(event):
                    continue
                with applying(applied, event, traceparent):
                    await apply(event)
        checkpoint = batch[-1][0]["seq"]
    return checkpoint


class Applied:
    """The events a fold applied, traced together (docs/adr/0170).

    A span per event cost a consumer more than folding a post did. One ``<service>.apply``
    span covers the fold of a page, from its first event to its last, and links to the
    append span each event was logged under, with the event's workspace, seq, type and
    message id; ``chips trace`` draws it in each of those traces, under that append span
    (at most ``LINKS_PER_SPAN`` links a span; more events, more spans). Use it as a
    context manager: the spans are written when it closes, if any event had a trace.
    """

    def __init__(self, tracer: Tracer, name: str) -> None:
        self.tracer = tracer
        self.name = name
        self.started = time.time_ns()
        self.links: list[Link] = []
        # Nothing to link when no span is recorded (docs/adr/0173).
        self.linking = otel.recording()

    def __enter__(self) -> Applied:
        return self

    def __exit__(self, *_: object) -> None:
        self.end()

    def add(self, event: EventJson, traceparent: str | None) -> None:
        """An event applied, under the trace it was appended in (none: not linked)."""
        sender = otel.span_context_from(traceparent) if self.linking else None
        if sender is None:
            return
        attributes: dict[str, AttributeValue] = {
            otel.WORKSPACE_ID: event["workspace_id"],
            otel.SEQ: event["seq"],
            otel.EVENT_TYPE: event["type"],
        }
        if "message_id" in event:
            attributes[otel.MESSAGE_ID] = event["message_id"]
        self.links.append(Link(sender, attributes))

    def end(self) -> None:
        links, self.links = self.links, []
        for span in otel.linked_spans(self.tracer, self.name, links, start_time=self.started):
            span.end()


@contextmanager
def applying(applied: Applied, event: EventJson, traceparent: str | None) -> Iterator[None]:
    """Apply one event: what its fold raises is raised as ``FoldFailed``, naming it
    (``poison.folding``); an event applied is added to ``applied``. The caller reads
    past an event ``set_aside`` says was dead-lettered."""
    with folding(event):
        yield
    applied.add(event, traceparent)


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
