"""After the answer: the committed events to ``CHIPS_EVENTS``, and the outbox cleared.

The events go from one publisher task, in commit order (``Nats-Msg-Id`` = event id); their
outbox rows are cleared together once the stream has them (docs/adr/0024, ADR 0118). A
crash after a commit is repaired by the sweeper, which publishes what the outbox still
holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import orjson
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from sqlalchemy import delete, text, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common import otel
from chips_common.db import tables as t
from chips_common.db.direct import Conn, Direct
from chips_common.db.retry import once_more
from chips_common.events import LoggedJson
from chips_common.nats import principals
from chips_common.nats.stored import StoredPublisher
from chips_common.nats.streams import HDR_MSG_ID, HDR_TRACEPARENT, Names
from chips_eventlog import purge, store
from chips_eventlog.heard import Heard, Waiter
from chips_eventlog.pending import Sent

log = logging.getLogger(__name__)
tracer = otel.tracer("chips.eventlog")


# How long a published event's outbox row may wait to be cleared with later ones, and how
# many may wait (ADR 0118): one statement a quarter second at most, not one per round.
CLEAR_EVERY = 0.25
CLEAR_AT_MOST = 1000


# The rows as one JSON document, not two arrays: psycopg adapts arrays element by element
# in Python (ADR 0117).
_CLEAR = text(
    "DELETE FROM outbox o USING jsonb_to_recordset(CAST(:rows AS jsonb))"
    " AS d(workspace_id text, seq bigint)"
    " WHERE o.workspace_id = d.workspace_id AND o.seq = d.seq"
)


async def clear_outbox(
    engine: AsyncEngine, events: list[LoggedJson], unsynced: AsyncEngine | None = None
) -> None:
    """Delete the outbox rows of published events: one statement, one transaction.

    Its commit does not wait for the WAL to reach the disk (``synchronous_commit`` off):
    a deletion a crash takes back only means the event is published again, and the stream
    drops the copy (``Nats-Msg-Id``). The appends' own commits keep waiting for the disk.
    ``unsynced``: an autocommit engine whose sessions never wait for the disk, where the
    deletion is its one statement, no ``BEGIN``, ``SET`` or ``COMMIT`` around it.
    """
    keys = [(e["workspace_id"], e["seq"]) for e in events]
    if not keys:
        return
    if unsynced is not None:
        rows = orjson.dumps([{"workspace_id": w, "seq": s} for w, s in keys]).decode()

        async def delete_them(conn: AsyncConnection) -> None:
            await conn.execute(_CLEAR, {"rows": rows})

        await once_more(unsynced, delete_them)
        return
    async with engine.begin() as conn:
        await conn.execute(text("SET LOCAL synchronous_commit TO OFF"))
        for start in range(0, len(keys), 5000):
            chunk = keys[start : start + 5000]
            await conn.execute(
                delete(t.outbox).where(tuple_(t.outbox.c.workspace_id, t.outbox.c.seq).in_(chunk))
            )


# How old an event in the outbox must be for a periodic sweep to publish it: what is younger
# is the publisher's, confirming it (it gives up after ``publish_timeout`` and leaves it).
SWEEP_SETTLED_SECONDS = 1.0

# The sweeper's look (``Publishing.outbox_look``; docs/adr/0166).
OUTBOX_LOOK = (
    "SELECT EXISTS(SELECT 1 FROM outbox) AS outbox, EXISTS(SELECT 1 FROM erasures) AS erasures"
)


class Publishing:
    """The append loop's publishing part (the :class:`chips_eventlog.consumer.Appender`
    sets these up)."""

    engine: AsyncEngine
    outbox_engine: AsyncEngine | None
    direct: Direct | None
    nc: NATS
    js: JetStreamContext
    stored: StoredPublisher
    names: Names
    outbox_lock: asyncio.Lock
    publish_timeout: float
    to_confirm: list[Sent]
    publish_wanted: asyncio.Event
    publish_idle: asyncio.Event
    to_clear: list[LoggedJson]
    clear_due: float | None
    clear_every: float
    clear_at_most: int
    principals_owed: bool
    heard: Heard

    def hand_over(self, sent: list[Sent]) -> None:
        """Give the publisher events written to the stream, in commit order (no waiting)."""
        if sent:
            self.to_confirm.extend(sent)
            self.publish_idle.clear()
            self.publish_wanted.set()

    async def publisher(self) -> None:
        """Confirm what was published since the last round, until cancelled.

        A round awaits the stream's acks of everything written while the last one was in
        flight, together. What the stream did not take stays in the outbox for the sweeper.
        The outbox rows of what it took are cleared in one statement once the oldest has
        waited ``clear_every`` seconds, or once ``clear_at_most`` are waiting (ADR 0118).
        """
        loop = asyncio.get_running_loop()
        while True:
            if self.clear_due is None:
                await self.publish_wanted.wait()
            else:
                # (``asyncio.timeout``: ``wait_for`` makes a task of every round.)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(max(0.0, self.clear_due - loop.time())):
                        await self.publish_wanted.wait()
            self.publish_wanted.clear()
            while self.to_confirm:
                sent, self.to_confirm = self.to_confirm, []
                try:
                    async with self.outbox_lock:
                        await self.confirm(sent, clear=False)
                except Exception:
                    log.exception("confirming %d events failed; the sweeper retries", len(sent))
            self.publish_idle.set()
            if self.to_clear and (
                len(self.to_clear) >= self.clear_at_most
                or (self.clear_due is not None and loop.time() >= self.clear_due)
            ):
                async with self.outbox_lock:
                    await self.clear_waiting()

    async def clear_waiting(self) -> None:
        """Clear the outbox rows of the published events waiting for it, now.

        If the statement fails, the rows stay and the sweeper publishes them again (the
        stream drops the copies by ``Nats-Msg-Id``) and clears them.
        """
        rows, self.to_clear, self.clear_due = self.to_clear, [], None
        try:
            await clear_outbox(self.engine, rows, self.outbox_engine)
        except Exception:
            log.exception("clearing %d outbox rows failed; the sweeper retries", len(rows))

    async def drain_publisher(self, timeout: float) -> None:
        """Let the publisher finish what was handed to it, and clear what it published
        (on the way out)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.publish_idle.wait(), timeout)
        async with self.outbox_lock:
            await self.clear_waiting()

    async def notice_principals(self, workspace_id: str) -> tuple[str, Waiter] | None:
        """Tell every gateway to forget who the workspace's tokens were (docs/adr/0169):
        on this connection, before the events and the answers that follow. What it returns
        waits for every gateway's reply that it has (``Heard.wait``, docs/adr/0172); None
        when nothing can be waited for.

        One that cannot be sent is owed, as a notice naming every workspace, sent with the
        next notice or by the sweeper.
        """
        if self.principals_owed:
            workspace_id = principals.EVERY_WORKSPACE
        reply, waiter = self.heard.ask()
        try:
            await self.nc.publish(
                self.names.principals_subject, principals.notice(workspace_id), reply=reply
            )
        except Exception as exc:
            log.warning("could not send the principals notice of %s: %r", workspace_id, exc)
            self.principals_owed = True
            self.heard.drop(reply)
            return None
        self.principals_owed = False
        return None if waiter is None else (reply, waiter)

    async def tell_principals(self, workspace_id: str) -> None:
        """:meth:`notice_principals`, with nobody answered after it: no reply is waited for."""
        asked = await self.notice_principals(workspace_id)
        if asked is not None:
            self.heard.drop(asked[0])

    async def send_events(self, traced: list[tuple[LoggedJson, str | None]]) -> list[Sent]:
        """Write committed events to ``CHIPS_EVENTS`` (``Nats-Msg-Id`` = event id), each with
        the trace context of the append that logged it, without waiting for any ack."""
        sent: list[Sent] = []
        for e, tp in traced:
            try:
                future = await self.stored.publish(
                    self.names.events_subject(e["workspace_id"]),
                    orjson.dumps(e),
                    headers={HDR_MSG_ID: e["id"], **({HDR_TRACEPARENT: tp} if tp else {})},
                )
            except Exception as exc:  # not connected: it waits in the outbox for the sweeper
                future = asyncio.get_running_loop().create_future()
                future.set_exception(exc)
            sent.append((e, future))
        return sent

    async def confirm(self, sent: list[Sent], clear: bool = True) -> int:
        """Await the stream's acks of written events together, then clear their outbox rows
        (or, with ``clear`` False, leave them to be cleared with the next ones: ADR 0118).

        Returns how many the stream took; the others stay in the outbox for the sweeper.
        """
        if not sent:
            return 0
        events = [e for e, _ in sent]
        futures = [f for _, f in sent]
        await asyncio.wait(futures, timeout=self.publish_timeout)
        results: list[Any] = []
        for future in futures:
            if not future.done():
                future.cancel()
                results.append(TimeoutError("no publish ack in time"))
            elif future.cancelled():
                results.append(TimeoutError("publish cancelled"))
            else:
                results.append(future.exception() or future.result())
        done = [e for e, r in zip(events, results, strict=True) if not isinstance(r, BaseException)]
        if len(done) < len(events):
            failure = next(r for r in results if isinstance(r, BaseException))
            log.warning(
                "%d events left in the outbox for the sweeper: %r", len(events) - len(done), failure
            )
        if clear:
            await clear_outbox(self.engine, done, self.outbox_engine)
        elif done:
            if self.clear_due is None:
                self.clear_due = asyncio.get_running_loop().time() + self.clear_every
            self.to_clear.extend(done)
        await purge.after_publish(self.js, self.names, self.engine, events, results)
        return len(done)

    async def publish(self, traced: list[tuple[LoggedJson, str | None]]) -> int:
        """Publish committed events and confirm them (the sweeper's way)."""
        return await self.confirm(await self.send_events(traced))

    async def outbox_look(self) -> tuple[bool, bool]:
        """Whether the outbox holds a row, and whether an erasure is left half done: one
        autocommit statement on psycopg itself, so a sweep that finds nothing (most of
        them) costs no SQLAlchemy (docs/adr/0166). Without ``direct``, (True, True)."""
        if self.direct is None:
            return True, True

        async def one(conn: Conn) -> tuple[bool, bool]:
            row = await (await conn.execute(OUTBOX_LOOK)).fetchone()
            return (True, True) if row is None else (bool(row.outbox), bool(row.erasures))

        return await self.direct.run(one)

    async def sweep_outbox(self, settled: float = 0.0) -> int:
        """Publish what the outbox holds (events committed but not yet published).

        ``settled``: only events logged at least that many seconds ago. A periodic sweep
        leaves younger ones to the publisher confirming them (under a steady load the
        outbox always holds some, and a sweep that took them chased the load's tail,
        publishing each again); the sweep at start takes every one.
        """
        async with self.outbox_lock:
            # Published rows waiting to be cleared are cleared first, not published again.
            await self.clear_waiting()
            waiting, erasures = await self.outbox_look()
            total = 0
            while waiting:
                traced = await store.unpublished(self.engine, settled=settled)
                if not traced:
                    break
                published = await self.publish(traced)
                total += published
                if published < len(traced):
                    return total  # NATS is refusing; the next sweep tries again
            if erasures:
                await purge.sweep(self.js, self.names, self.engine)
            return total
