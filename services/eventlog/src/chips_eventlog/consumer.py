"""The append loop: pull requests, commit them in batches, answer, then publish.

Requests for one workspace that arrive together are appended in one transaction (group
commit, DESIGN.md §2), decided by the door in memory, where one refusal is undone without
touching its neighbours (docs/adr/0021); every commit is fenced by the partition lease's
epoch (docs/adr/0022). Right after the commit the requests are answered and acked, all of
a batch together; the events then go to ``CHIPS_EVENTS`` (``Nats-Msg-Id`` = event id)
from one publisher task, in commit order, and their outbox rows are cleared
(docs/adr/0024). A crash anywhere after the commit is repaired by publishing what the
outbox still holds (on start, and by the sweeper); a redelivered request finds its key and
is answered as a duplicate. A request that fails every time is answered with ``internal``
and set aside on the dead-letter stream once its deliveries or its time run out
(docs/adr/0025).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import psycopg
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig
from nats.js.errors import NotFoundError
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind
from pydantic import ValidationError
from sqlalchemy import delete, select, text, tuple_
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common import otel
from chips_common.append import AppendAnswer, AppendRequest, brief
from chips_common.clock import utcnow
from chips_common.db import tables as t
from chips_common.db.direct import Conn, Direct
from chips_common.db.retry import once_more
from chips_common.nats.stored import StoredPublisher
from chips_common.nats.streams import HDR_MSG_ID, HDR_REPLY, HDR_TRACEPARENT, Names
from chips_common.service.metrics import LagProbe
from chips_eventlog import metrics, purge, state_store, store
from chips_eventlog.door import Door
from chips_eventlog.leases import Fenced, Held, Leases, fence
from chips_eventlog.refused import Refused
from chips_eventlog.rules.common import ASK_WAIT
from chips_eventlog.state import DoorState

log = logging.getLogger(__name__)
tracer = otel.tracer("chips.eventlog")


# An event written to CHIPS_EVENTS, and the future of the stream's ack.
Sent = tuple[dict[str, Any], "asyncio.Future[Any]"]


@dataclass
class Pending:
    msg: Msg
    request: AppendRequest
    span: Span
    answer: AppendAnswer | None = None
    published: list[dict[str, Any]] = field(default_factory=list)

    @property
    def traceparent(self) -> str | None:
        return otel.traceparent_of(self.span)


# How long after a key met in the table a partition's batches read their keys first.
RESENDS_SECONDS = 5.0

# Deliveries after which a request is appended alone rather than with its batch.
ISOLATE_AFTER = 2

# Workspaces whose door state a takeover reads together, each table once for them all.
TAKEOVER_CHUNK = 250


def deliveries(msg: Msg) -> int:
    """How many times JetStream has handed this request out (1 the first time)."""
    try:
        return int(msg.metadata.num_delivered)
    except Exception:  # not a JetStream message (a test's plain one)
        return 1


def age_seconds(msg: Msg, now: datetime | None = None) -> float:
    """Seconds since the request entered the append stream."""
    try:
        stored = msg.metadata.timestamp
    except Exception:
        return 0.0
    return ((now or datetime.now(UTC)) - stored).total_seconds()


def give_up(delivered: int, max_deliver: int, age: float, cap: float) -> str | None:
    """Why a request that just failed is not to be tried again, or None to try again.

    Its deliveries have run out (JetStream would not hand it out again, and it would
    stay unanswered), or it is older than the per-request cap (its writer is about to be
    told the log did not answer, and a request that failed for that long is not
    transient).
    """
    if delivered >= max_deliver:
        return f"failed on each of its {delivered} deliveries"
    if age >= cap:
        return f"still failing {age:.1f} s after it was sent (delivery {delivered})"
    return None


# How long a published event's outbox row may wait to be cleared with later ones, and how
# many may wait (ADR 0118): one statement a quarter second at most, not one per round.
CLEAR_EVERY = 0.25
CLEAR_AT_MOST = 1000


def backoff(delivered: int) -> float:
    """How long a failed request waits before its next delivery: 50 ms, doubling, ≤ 0.5 s."""
    return float(min(0.05 * 2 ** max(0, delivered - 1), 0.5))


# The rows as one JSON document, not two arrays: psycopg adapts arrays element by element
# in Python (ADR 0117).
_CLEAR = text(
    "DELETE FROM outbox o USING jsonb_to_recordset(CAST(:rows AS jsonb))"
    " AS d(workspace_id text, seq bigint)"
    " WHERE o.workspace_id = d.workspace_id AND o.seq = d.seq"
)


async def clear_outbox(
    engine: AsyncEngine, events: list[dict[str, Any]], unsynced: AsyncEngine | None = None
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


class Appender:
    def __init__(
        self,
        engine: AsyncEngine,
        nc: NATS,
        js: JetStreamContext,
        names: Names,
        *,
        max_deliver: int = 20,
        request_cap: float = 5.0,
        delivery_cap: float = 10.0,
        publish_timeout: float = 5.0,
        ask_wait: timedelta = ASK_WAIT,
        fast_engine: AsyncEngine | None = None,
        outbox_engine: AsyncEngine | None = None,
        direct: Direct | None = None,
        clear_every: float = CLEAR_EVERY,
        clear_at_most: int = CLEAR_AT_MOST,
    ) -> None:
        self.engine = engine
        # Autocommit, no pre-ping: a batch decided from memory is one statement on it.
        self.fast_engine = fast_engine or engine.execution_options(isolation_level="AUTOCOMMIT")
        # When given, that statement goes on psycopg itself instead (docs/adr/0120).
        self.direct = direct
        # Commits that do not wait for the disk: the outbox's deletions (docs/adr/0024).
        self.outbox_engine = outbox_engine
        self.nc = nc
        self.js = js
        self.stored = StoredPublisher(nc)
        self.names = names
        self.outbox_lock = asyncio.Lock()
        self.max_deliver = max_deliver
        self.request_cap = request_cap
        self.delivery_cap = delivery_cap
        self.publish_timeout = publish_timeout
        self.ask_wait = ask_wait
        # Committed events written to the stream, waiting for its acks, in commit order.
        self.to_confirm: list[Sent] = []
        self.publish_wanted = asyncio.Event()
        self.publish_idle = asyncio.Event()
        self.publish_idle.set()
        # Published events whose outbox rows wait to be cleared together (ADR 0118), and
        # when the oldest of them is due.
        self.to_clear: list[dict[str, Any]] = []
        self.clear_due: float | None = None
        self.clear_every = clear_every
        self.clear_at_most = clear_at_most

    # --- one workspace's batch -----------------------------------------------------

    async def append_group(self, workspace_id: str, items: list[Pending], held: Held) -> None:
        """Append every request in ``items`` in one transaction, and trace the commit."""
        started = time.time_ns()
        await self._append_group(workspace_id, items, held)
        ended = time.time_ns()
        metrics.BATCH_SECONDS.observe((ended - started) / 1e9)
        metrics.BATCH_SIZE.observe(len(items))
        for item in items:
            tracer.start_span(
                "eventlog.commit",
                context=trace.set_span_in_context(item.span),
                start_time=started,
                attributes={otel.WORKSPACE_ID: workspace_id, "chips.batch_size": len(items)},
            ).end(end_time=ended)

    async def _append_group(self, workspace_id: str, items: list[Pending], held: Held) -> None:
        """Decide from the workspace's door state in memory, then write the batch.

        The state is read from Postgres the first time this lease needs it (or again when
        the head row says someone else wrote); a transaction that fails takes it away, so
        the next batch reads it afresh and memory never holds what was not committed.
        """
        try:
            written = await self._decide_and_write(workspace_id, items, held)
        except BaseException:
            held.states.pop(workspace_id, None)
            raise
        if written is not None:
            state, head_seq = written
            state.settle(
                head_seq,
                [
                    ((p.request.credential_id, p.request.idempotency_key), p.answer.seqs)
                    for p in items
                    if p.answer is not None and p.answer.ok and not p.answer.duplicate
                ],
            )

    async def _decide_and_write(
        self, workspace_id: str, items: list[Pending], held: Held
    ) -> tuple[DoorState, int] | None:
        now = utcnow()
        state = held.states.get(workspace_id)
        recent = time.monotonic() - held.resent_at < RESENDS_SECONDS
        if state is not None and not recent and self._known(items, state):
            written = await self._decide_and_write_known(workspace_id, items, held, state, now)
            if written is not None:
                return written
            metrics.SLOW_PATH.inc()
            for item in items:
                item.answer, item.published = None, []
        return await self._decide_and_write_locked(workspace_id, items, held, now)

    @staticmethod
    def _known(items: list[Pending], state: DoorState) -> bool:
        """Whether the batch can be decided from memory and written in one statement
        (docs/adr/0105): nothing to read first, no key seen before in memory (a
        duplicate's answer may need its events read), no key twice, no workspace made."""
        keys = [(p.request.credential_id, p.request.idempotency_key) for p in items]
        if len(set(keys)) < len(keys) or any(k in state.keys for k in keys):
            return False
        raws = [e for p in items for e in p.request.events]
        if any(isinstance(e, dict) and e.get("type") == "workspace.created" for e in raws):
            return False
        return not state_store.reads_for(state, raws)

    async def _decide_and_write_known(
        self,
        workspace_id: str,
        items: list[Pending],
        held: Held,
        state: DoorState,
        now: datetime,
    ) -> tuple[DoorState, int] | None:
        """Decide from the state in memory, then write the batch guarded by the head row
        and the lease in the same statement: no lock taken first, no read (ADR 0105).

        Returns None, with the state as it was, when the guarded write did not happen
        because the head moved (another writer: the caller then locks and reads afresh)
        or a key was in the table already (a re-send from before this lease's window).
        """
        door = Door(state, now, self.ask_wait)
        start = door.mark()
        fresh_keys: list[dict[str, Any]] = []
        for item in items:
            req = item.request
            item.answer, item.published = self._append_one(door, req, item.traceparent)
            if item.answer.ok:
                fresh_keys.append(
                    {
                        "credential_id": req.credential_id,
                        "key": req.idempotency_key,
                        "seqs": item.answer.seqs,
                    }
                )
        lease = (held.partition, held.holder, held.epoch) if held.holder else None

        async def write(conn: AsyncConnection | Conn) -> tuple[bool, bool]:
            return await store.write_guarded(
                conn,
                workspace_id,
                state.head_seq,
                door.head_seq,
                door.pending,
                door.traces,
                fresh_keys,
                now,
                lease,
            )

        try:
            if state_store.unflushed(state):
                # Door-state rows to write too: the guarded statement, then theirs, in one
                # transaction.
                async with self.engine.begin() as conn:
                    wrote, leased = await write(conn)
                    if wrote:
                        await state_store.flush(conn, state, now)
            elif self.direct is not None:
                wrote, leased = await self.direct.run(write)
            else:
                wrote, leased = await once_more(self.fast_engine, write)
        except (IntegrityError, psycopg.IntegrityError):
            held.resent_at = time.monotonic()
            door.undo(start)
            return None
        if not leased:
            held.fenced = True
            raise Fenced(f"partition {held.partition}: the lease at epoch {held.epoch} is gone")
        if not wrote:
            door.undo(start)
            return None
        if door.erased:  # what the batch said in a room it then erased is not published
            for item in items:
                item.published = [
                    e
                    for e in item.published
                    if e.get("space_id") not in door.erased
                    or e["type"] == "space.erased"
                    or e["seq"] in door.spared
                ]
        return state, door.head_seq

    async def _decide_and_write_locked(
        self, workspace_id: str, items: list[Pending], held: Held, now: datetime
    ) -> tuple[DoorState, int] | None:
        """Lock the head row, fence, read what memory lacks, decide, write, commit."""
        async with self.engine.begin() as conn:
            creates = any(
                e.get("type") == "workspace.created" for p in items for e in p.request.events
            )
            head = await store.lock_head(conn, workspace_id, create=creates, now=now)
            await fence(conn, held)  # no write under a lease that is gone (ADR 0022)
            state = held.states.get(workspace_id)
            if head is not None and (state is None or state.head_seq != head):
                state = await state_store.load(conn, workspace_id)
                held.states[workspace_id] = state
            keys = [(p.request.credential_id, p.request.idempotency_key) for p in items]
            seen: dict[tuple[str, str], tuple[str, list[int]]] = {}
            if state is not None:
                seen = {k: (workspace_id, state.keys[k]) for k in keys if k in state.keys}
            misses = [k for k in keys if k not in seen]
            if misses:
                # Keys outside the window in memory (older ones, or sent before this lease:
                # the re-sends after a takeover) are read from the table, in one query.
                seen.update(await store.find_keys(conn, misses))
            if state is None:  # no such workspace, and nothing creates it
                for item in items:
                    req = item.request
                    key = (req.credential_id, req.idempotency_key)
                    item.answer = (
                        await self._duplicate(conn, req, seen[key], items)
                        if key in seen
                        else AppendAnswer.refused(
                            req.request_id, "not_found", "no such workspace", "workspace_id"
                        )
                    )
                return None
            await state_store.prefetch(conn, state, [e for p in items for e in p.request.events])
            door = Door(state, now, self.ask_wait)
            fresh_keys: list[dict[str, Any]] = []
            for item in items:
                req = item.request
                key = (req.credential_id, req.idempotency_key)
                if key in seen:
                    item.answer = await self._duplicate(conn, req, seen[key], items)
                    continue
                item.answer, item.published = self._append_one(door, req, item.traceparent)
                if item.answer.ok:
                    seqs = item.answer.seqs
                    seen[key] = (workspace_id, seqs)
                    fresh_keys.append(
                        {
                            "credential_id": req.credential_id,
                            "key": req.idempotency_key,
                            "workspace_id": workspace_id,
                            "seqs": seqs,
                            "created_at": now,
                        }
                    )
            await store.write_events(conn, workspace_id, door.pending, door.traces, now)
            await state_store.flush(conn, state, now)
            if door.erased:  # what the batch said in a room it then erased is not published
                for item in items:
                    item.published = [
                        e
                        for e in item.published
                        if e.get("space_id") not in door.erased
                        or e["type"] == "space.erased"
                        or e["seq"] in door.spared
                    ]
            await store.save_keys(conn, fresh_keys)
            if door.head_seq > 0:
                await store.save_head(conn, workspace_id, door.head_seq)
            elif creates:
                await store.drop_empty_workspace(conn, workspace_id)
                held.states.pop(workspace_id, None)
                return None
        return state, door.head_seq

    @staticmethod
    async def _duplicate(
        conn: Any,
        req: AppendRequest,
        seen: tuple[str, list[int]],
        items: list[Pending],
    ) -> AppendAnswer:
        """The answer to a key seen before: the events it logged, marked a duplicate."""
        seen_workspace, seqs = seen
        events = [e for p in items for e in p.published if e["seq"] in seqs]
        if not events:
            events = await store.read_events(conn, seen_workspace, seqs)
        return AppendAnswer(
            request_id=req.request_id, ok=True, seqs=seqs, events=events, duplicate=True
        )

    @staticmethod
    def _append_one(
        door: Door, req: AppendRequest, traceparent: str | None
    ) -> tuple[AppendAnswer, list[dict[str, Any]]]:
        """Let one request through the door, or refuse it leaving no trace.

        The door decides in memory; a refusal undoes what the request's events changed
        in the state and staged, and nothing of it reaches Postgres.
        """
        mark = door.mark()
        try:
            events = door.append(req, traceparent)
        except Refused as refusal:
            door.undo(mark)
            return AppendAnswer.refused(
                req.request_id, refusal.code, refusal.message, refusal.field, refusal.data
            ), []
        seqs = [e["seq"] for e in events]
        return AppendAnswer(request_id=req.request_id, ok=True, seqs=seqs, events=events), events

    # --- the loop --------------------------------------------------------------------

    async def handle_batch(self, msgs: list[Msg], held: Held) -> None:
        """Append what one fetch brought, answering each group right after its commit.

        A request handed out more than ``ISOLATE_AFTER`` times goes alone, so that a
        request that fails every time (or brings the process down) does not take its
        neighbours with it (:func:`give_up`). A first redelivery (what an eventlog that
        died leaves behind, many at once) is still batched.
        """
        groups: list[tuple[str, list[Pending]]] = []
        fresh: OrderedDict[str, list[Pending]] = OrderedDict()
        for msg in msgs:
            try:
                request = AppendRequest.model_validate_json(msg.data)
            except ValidationError as exc:
                await self.dead_letter(msg, f"not an append request: {exc.errors()[0]['msg']}")
                continue
            span = tracer.start_span(
                "eventlog.append",
                context=otel.extract(msg.headers),
                kind=SpanKind.CONSUMER,
                attributes={
                    otel.WORKSPACE_ID: request.workspace_id,
                    otel.EVENT_TYPE: ",".join(str(e.get("type")) for e in request.events),
                },
            )
            item = Pending(msg, request, span)
            if deliveries(msg) > ISOLATE_AFTER:
                groups.append((request.workspace_id, [item]))
            else:
                fresh.setdefault(request.workspace_id, []).append(item)
        groups.extend(fresh.items())

        for workspace_id, items in groups:
            if held.fenced:  # the partition is another replica's now: put it all back
                for item in items:
                    item.span.end()
                    await item.msg.nak()
                continue
            try:
                await self.append_capped(workspace_id, items, held)
            except Fenced as fenced:
                log.warning("%s; handing the batch back", fenced)
                metrics.FENCED.inc()
                for item in items:
                    item.span.end()
                    await item.msg.nak()
                continue
            except Exception as exc:
                if len(items) == 1:
                    await self.failed(items[0], exc)
                    continue
                # One of them may be at fault (a key or an id raced, or a request that
                # breaks the door): append them one by one instead.
                if not isinstance(exc, IntegrityError):
                    log.warning("batch of %d failed (%r); one by one", len(items), exc)
                for item in items:
                    item.answer, item.published = None, []
                    try:
                        await self.append_capped(workspace_id, [item], held)
                    except Fenced:
                        metrics.FENCED.inc()
                        item.span.end()
                        await item.msg.nak()
                        continue
                    except Exception as alone:
                        await self.failed(item, alone)
                        continue
                    await self.committed([item])
                continue
            await self.committed(items)

    async def append_capped(self, workspace_id: str, items: list[Pending], held: Held) -> None:
        """append_group, given at most the delivery time cap (a hung batch is a failure)."""
        try:
            await asyncio.wait_for(
                self.append_group(workspace_id, items, held),
                self.delivery_cap,
            )
        except TimeoutError:
            raise TimeoutError(f"the append took longer than {self.delivery_cap:g} s") from None

    async def committed(self, items: list[Pending]) -> None:
        """Publish a committed group's events, then answer and ack every request in it.

        Nothing here waits on the network (docs/adr/0024): the events, then the answers
        and acks, are written to the NATS connection, which sends them together and in
        that order, so an event is on its way to the gateways before its writer hears the
        ack. The publisher task awaits the stream's acks and clears the outbox.
        """
        traced = [(e, item.traceparent) for item in items if item.answer for e in item.published]
        sent = await self.send_events(traced)
        for item in items:
            if item.answer is not None:
                await self.reply(item.msg, item.answer)
                await item.msg.ack()
                self.record(item)
            item.span.end()
        self.hand_over(sent)

    async def failed(self, item: Pending, exc: BaseException) -> None:
        """A request whose append failed: tried again later, or given up and answered."""
        why = give_up(
            deliveries(item.msg),
            self.max_deliver,
            age_seconds(item.msg),
            self.request_cap,
        )
        item.span.record_exception(exc)
        item.span.end()
        if why is None:
            log.warning("append of %s failed, trying again: %r", item.request.request_id, exc)
            await item.msg.nak(delay=backoff(deliveries(item.msg)))
            return
        log.error("giving up on %s (%s): %r", item.request.request_id, why, exc)
        answer = AppendAnswer.refused(
            item.request.request_id,
            "internal",
            f"Chips could not log this ({why}); it was set aside for an operator, "
            "sending it again will not help",
        )
        await self.reply(item.msg, answer)
        metrics.APPENDS.labels("failed").inc(len(item.request.events))
        await self.dead_letter(item.msg, f"{why}: {exc!r}"[:500])

    @staticmethod
    def record(item: Pending) -> None:
        answer = item.answer
        assert answer is not None
        outcome = "duplicate" if answer.duplicate else ("ok" if answer.ok else "refused")
        metrics.APPENDS.labels(outcome).inc(len(item.request.events))
        if answer.seqs:
            item.span.set_attribute(otel.SEQ, answer.seqs[-1])
        if answer.events and "message_id" in answer.events[-1]:
            item.span.set_attribute(otel.MESSAGE_ID, answer.events[-1]["message_id"])
        if not answer.ok:
            item.span.set_attribute("chips.refused", answer.code or "")

    # --- after the answer: publishing and clearing the outbox ---------------------------

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
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self.publish_wanted.wait(), max(0.0, self.clear_due - loop.time())
                    )
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

    async def send_events(self, traced: list[tuple[dict[str, Any], str | None]]) -> list[Sent]:
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

    async def publish(self, traced: list[tuple[dict[str, Any], str | None]]) -> int:
        """Publish committed events and confirm them (the sweeper's way)."""
        return await self.confirm(await self.send_events(traced))

    async def reply(self, msg: Msg, answer: AppendAnswer) -> None:
        """Write the answer to the requester's reply subject.

        A NATS publish only fills the connection's buffer (it does not wait for the
        server), so the answers and acks of a batch leave together on the next flush.
        """
        reply = (msg.headers or {}).get(HDR_REPLY)
        if reply:
            slim = answer.model_copy(update={"events": [brief(e) for e in answer.events]})
            await self.nc.publish(reply, slim.model_dump_json(exclude_none=True).encode())

    async def dead_letter(self, msg: Msg, why: str) -> None:
        """Set a request aside on the dead-letter stream, where an operator can read it."""
        log.error("dead-lettering an append request: %s", why)
        headers = {
            "Chips-Dead-Reason": why,
            "Chips-Deliveries": str(deliveries(msg)),
            "Chips-Subject": msg.subject,
        }
        if msg.headers and HDR_TRACEPARENT in msg.headers:
            headers[HDR_TRACEPARENT] = msg.headers[HDR_TRACEPARENT]
        try:
            await self.js.publish(self.names.dead_letter_subject, msg.data, headers=headers)
        except Exception:
            # The stream is not there (or NATS is away): at least the subject hears it.
            log.exception("the dead-letter stream did not take it; publishing it plainly")
            await self.nc.publish(self.names.dead_letter_subject, msg.data, headers=headers)
        await msg.term()

    async def sweep_outbox(self) -> int:
        """Publish whatever the outbox holds (events committed but not yet published)."""
        async with self.outbox_lock:
            # Published rows waiting to be cleared are cleared first, not published again.
            await self.clear_waiting()
            total = 0
            while True:
                traced = await store.unpublished(self.engine)
                if not traced:
                    await purge.sweep(self.js, self.names, self.engine)
                    return total
                published = await self.publish(traced)
                total += published
                if published < len(traced):
                    return total  # NATS is refusing; the next sweep tries again

    async def run(
        self,
        stop: asyncio.Event,
        batch_size: int,
        sweep_seconds: float,
        ack_wait: float,
        lease_check_seconds: float,
        lease_ttl_seconds: float = 5.0,
    ) -> None:
        """Serve the partitions this replica leases until ``stop``, renewing the leases by
        heartbeat and rebalancing as replicas come and go (docs/adr/0022)."""
        await self._drop_unpartitioned_consumer()
        swept = await self.sweep_outbox()
        if swept:
            log.info("re-published %d events from the outbox", swept)
        sweeper = asyncio.create_task(self._sweep_every(stop, sweep_seconds))
        publisher = asyncio.create_task(self.publisher())
        leases = Leases(self.engine, self.names.partitions, lease_ttl_seconds)
        await leases.open()
        log.info("eventlog replica %s", leases.holder)
        running: dict[int, tuple[asyncio.Task[None], asyncio.Event]] = {}
        beat = min(lease_check_seconds, lease_ttl_seconds / 3)
        # The heartbeat has a task of its own, so that nothing the rebalancing waits for
        # (a partition finishing its batch) can delay a renewal.
        heart = asyncio.create_task(self._beat(stop, leases, beat))

        async def halt(partition: int) -> None:
            task, done = running.pop(partition)
            done.set()
            await asyncio.gather(task, return_exceptions=True)

        try:
            while not stop.is_set():
                for partition, (task, _) in list(running.items()):
                    held = leases.held.get(partition)
                    if held is not None and (held.lost or held.fenced):
                        # Another replica holds it now: stop writing, forget its state.
                        await halt(partition)
                        leases.forget(partition)
                    elif task.done():  # a partition loop that crashed is started again
                        await halt(partition)
                        await leases.release(partition)
                taken, give_back = await leases.rebalance(set(running))
                for partition in give_back:
                    await halt(partition)
                    await leases.release(partition)
                    log.info("handed back append partition %d", partition)
                for held in taken:
                    done = asyncio.Event()
                    task = asyncio.create_task(
                        self.serve_partition(held, done, batch_size, ack_wait)
                    )
                    running[held.partition] = (task, done)
                if taken:
                    log.info(
                        "serving append partitions %s (took %s)",
                        sorted(running),
                        {h.partition: h.epoch for h in taken},
                    )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), beat)
        finally:
            # Every partition finishes its batch in flight at once, then the leases go.
            for _, done in running.values():
                done.set()
            await asyncio.gather(*(task for task, _ in running.values()), return_exceptions=True)
            # What was answered is published before the leases go (the outbox would
            # heal it anyway, a moment later).
            await self.drain_publisher(5)
            publisher.cancel()
            heart.cancel()
            await asyncio.gather(heart, return_exceptions=True)
            await leases.close()
            sweeper.cancel()

    @staticmethod
    async def _beat(stop: asyncio.Event, leases: Leases, every: float) -> None:
        """Renew the leases until ``stop``; mark each one found lost (its loop then ends)."""
        while not stop.is_set():
            try:
                lost = await leases.heartbeat()
            except Exception:
                log.exception("could not renew the partition leases")
                lost = {p for p, held in leases.held.items() if not held.fresh()}
                with contextlib.suppress(Exception):
                    await leases.reopen()
            for partition in sorted(lost):
                held = leases.held.get(partition)
                if held is not None and not held.lost:
                    log.error("lost the lease of append partition %d", partition)
                    metrics.LEASES_LOST.inc()
                    held.lost = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), every)

    async def load_states(self, held: Held) -> None:
        """Read ahead the door state of every workspace of a partition just taken (ADR 0021).

        Runs beside the partition's appends, never in front of them: a partition of many
        workspaces takes seconds to read on a loaded machine, and a request must not wait
        for workspaces it does not write to (a batch whose workspace is not read yet reads
        it itself). Read outside any append's transaction: a batch still checks the
        state's head seq against the head row it locks, and reads the state again when
        they differ (a commit of the previous holder, or of a batch of this lease, that
        landed after this read); and a state a batch put in place first is kept. A
        failure here only leaves a workspace to be read by its first batch.

        The workspaces are read :data:`TAKEOVER_CHUNK` at a time, each table once per
        chunk (a few statements for hundreds of workspaces, not seventeen for each), and
        the lease is looked at between chunks.
        """
        started = time.monotonic()
        try:
            async with self.engine.connect() as conn:
                found = await conn.execute(select(t.workspaces.c.id))
                ids = [r.id for r in found if self.names.partition_of(r.id) == held.partition]
                for start in range(0, len(ids), TAKEOVER_CHUNK):
                    if held.fenced or held.lost:
                        return
                    chunk = [w for w in ids[start : start + TAKEOVER_CHUNK] if w not in held.states]
                    for workspace_id, state in (await state_store.load_many(conn, chunk)).items():
                        held.states.setdefault(workspace_id, state)
        except Exception:
            log.exception("partition %d: door state not read ahead", held.partition)
            return
        log.info(
            "partition %d: door state of %d workspaces read in %.0f ms",
            held.partition,
            len(ids),
            (time.monotonic() - started) * 1000,
        )

    async def serve_partition(
        self, held: Held, done: asyncio.Event, batch_size: int, ack_wait: float
    ) -> None:
        """Append the requests of one partition until ``done``; the batch in flight finishes.

        While the lease's last renewal is older than its time to live, nothing is pulled;
        once a commit is fenced, the partition is another replica's and this loop ends.
        """
        partition = held.partition
        durable = self.names.consumer(f"eventlog_p{partition}")
        sub = await self.js.pull_subscribe(
            self.names.append_partition_subject(partition),
            durable=durable,
            stream=self.names.append_stream,
            config=ConsumerConfig(
                ack_policy=AckPolicy.EXPLICIT,
                ack_wait=ack_wait,
                max_deliver=self.max_deliver,
                max_ack_pending=20_000,
            ),
        )
        lag = LagProbe(self.names.append_stream, durable)
        # The door state of this partition's workspaces lives in ``held`` while the lease
        # does, and goes with it (docs/adr/0021).
        reading = asyncio.create_task(self.load_states(held))
        try:
            while not done.is_set() and not (held.fenced or held.lost):
                if not held.fresh():
                    await asyncio.sleep(0.05)
                    continue
                await lag.maybe_update(self.js)
                try:
                    msgs = await sub.fetch(batch_size, timeout=1)
                except (TimeoutError, NatsTimeout):
                    continue
                await self.handle_batch(msgs, held)
        finally:
            reading.cancel()
            await asyncio.gather(reading, return_exceptions=True)
            await sub.unsubscribe()

    async def _drop_unpartitioned_consumer(self) -> None:
        """Remove the single consumer of releases before partitions (it would overlap)."""
        with contextlib.suppress(NotFoundError):
            await self.js.delete_consumer(self.names.append_stream, self.names.consumer("eventlog"))

    async def _sweep_every(self, stop: asyncio.Event, seconds: float) -> None:
        while not stop.is_set():
            await asyncio.sleep(seconds)
            try:
                await self.sweep_outbox()
            except Exception:
                log.exception("outbox sweep failed")
