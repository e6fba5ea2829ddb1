"""The append loop: pull requests, commit them in batches, publish, answer.

Requests for one workspace that arrive together are appended in one transaction
(group commit, DESIGN.md §2), each under a savepoint so that one refusal does not undo
its neighbours. After the commit the events are published to ``CHIPS_EVENTS`` with
``Nats-Msg-Id`` = event id, the outbox rows are cleared, the requests are answered and
only then acked. A crash anywhere after the commit is repaired on start by publishing
what the outbox still holds; a redelivered request finds its key and is answered as a
duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig
from nats.js.errors import NotFoundError
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind
from pydantic import ValidationError
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common import otel
from chips_common.append import AppendAnswer, AppendRequest
from chips_common.clock import utcnow
from chips_common.nats.streams import HDR_MSG_ID, HDR_REPLY, HDR_TRACEPARENT, Names
from chips_common.service.metrics import LagProbe
from chips_eventlog import metrics, purge, state_store, store
from chips_eventlog.door import Door
from chips_eventlog.leases import Fenced, Held, Leases, fence
from chips_eventlog.refused import Refused
from chips_eventlog.state import DoorState

log = logging.getLogger(__name__)
tracer = otel.tracer("chips.eventlog")


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


class Appender:
    def __init__(self, engine: AsyncEngine, nc: NATS, js: JetStreamContext, names: Names) -> None:
        self.engine = engine
        self.nc = nc
        self.js = js
        self.names = names
        self.outbox_lock = asyncio.Lock()

    # --- one workspace's batch -----------------------------------------------------

    async def append_group(
        self, workspace_id: str, items: list[Pending], held: Held, *, check_keys: bool = False
    ) -> None:
        """Append every request in ``items`` in one transaction, and trace the commit."""
        started = time.time_ns()
        await self._append_group(workspace_id, items, held, check_keys)
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

    async def _append_group(
        self, workspace_id: str, items: list[Pending], held: Held, check_keys: bool
    ) -> None:
        """Decide from the workspace's door state in memory, then write the batch.

        The state is read from Postgres the first time this lease needs it (or again when
        the head row says someone else wrote); a transaction that fails takes it away, so
        the next batch reads it afresh and memory never holds what was not committed.
        """
        try:
            written = await self._decide_and_write(workspace_id, items, held, check_keys)
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
        self, workspace_id: str, items: list[Pending], held: Held, check_keys: bool
    ) -> tuple[DoorState, int] | None:
        now = utcnow()
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
            if check_keys:
                # Keys outside the window in memory; otherwise a key seen before is caught
                # by the table's primary key at commit, and the batch is decided again
                # one request at a time with this lookup (handle_batch).
                seen.update(await store.find_keys(conn, [k for k in keys if k not in seen]))
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
            door = Door(state, now)
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
                        if e.get("space_id") not in door.erased or e["type"] == "space.erased"
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
                req.request_id, refusal.code, refusal.message, refusal.field
            ), []
        seqs = [e["seq"] for e in events]
        return AppendAnswer(request_id=req.request_id, ok=True, seqs=seqs, events=events), events

    # --- the loop --------------------------------------------------------------------

    async def handle_batch(self, msgs: list[Msg], held: Held) -> None:
        groups: OrderedDict[str, list[Pending]] = OrderedDict()
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
            groups.setdefault(request.workspace_id, []).append(Pending(msg, request, span))

        for workspace_id, items in groups.items():
            try:
                await self.append_group(workspace_id, items, held)
            except IntegrityError:
                # Two requests raced on a key or an id: append them one by one instead.
                for item in items:
                    item.answer, item.published = None, []
                    try:
                        await self.append_group(workspace_id, [item], held, check_keys=True)
                    except Exception:
                        log.exception("append failed for %s", item.request.request_id)
                        await item.msg.nak(delay=1)
                        item.answer = None
            except Fenced as fenced:
                # Another replica holds the partition now: put the requests back for it.
                log.warning("%s; handing the batch back", fenced)
                metrics.FENCED.inc()
                for item in items:
                    item.span.end()
                    await item.msg.nak()
                continue
            except Exception:
                log.exception("append batch failed for workspace %s", workspace_id)
                for item in items:
                    item.span.end()
                    await item.msg.nak(delay=1)
                continue
            await self.publish([(e, item.traceparent) for item in items for e in item.published])
            for item in items:
                if item.answer is not None:
                    await self.answer(item.msg, item.answer)
                    await item.msg.ack()
                    self.record(item)
                item.span.end()

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

    async def publish(self, traced: list[tuple[dict[str, Any], str | None]]) -> int:
        """Publish committed events without awaiting each ack in turn, then clear the outbox.

        Each carries the trace context of the append that logged it. Returns how many were
        published; the others stay in the outbox for the sweeper.
        """
        if not traced:
            return 0
        events = [e for e, _ in traced]
        acks = [
            self.js.publish(
                self.names.events_subject(e["workspace_id"]),
                json.dumps(e, separators=(",", ":")).encode(),
                headers={HDR_MSG_ID: e["id"], **({HDR_TRACEPARENT: tp} if tp else {})},
            )
            for e, tp in traced
        ]
        results = await asyncio.gather(*acks, return_exceptions=True)
        done = [e for e, r in zip(events, results, strict=True) if not isinstance(r, BaseException)]
        if len(done) < len(events):
            failure = next(r for r in results if isinstance(r, BaseException))
            log.warning(
                "%d events left in the outbox for the sweeper: %r", len(events) - len(done), failure
            )
        await store.mark_published(self.engine, done)
        await purge.after_publish(self.js, self.names, self.engine, events, results)
        return len(done)

    async def answer(self, msg: Msg, answer: AppendAnswer) -> None:
        reply = (msg.headers or {}).get(HDR_REPLY)
        if reply:
            await self.nc.publish(reply, answer.model_dump_json(exclude_none=True).encode())

    async def dead_letter(self, msg: Msg, why: str) -> None:
        log.error("dead-lettering an append request: %s", why)
        headers = {"Chips-Dead-Reason": why}
        if msg.headers and HDR_TRACEPARENT in msg.headers:
            headers[HDR_TRACEPARENT] = msg.headers[HDR_TRACEPARENT]
        await self.nc.publish(self.names.dead_letter_subject, msg.data, headers=headers)
        await msg.term()

    async def sweep_outbox(self) -> int:
        """Publish whatever the outbox holds (events committed but not yet published)."""
        async with self.outbox_lock:
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
        leases = Leases(self.engine, self.names.partitions, lease_ttl_seconds)
        await leases.open()
        log.info("eventlog replica %s", leases.holder)
        running: dict[int, tuple[asyncio.Task[None], asyncio.Event]] = {}
        beat = min(lease_check_seconds, lease_ttl_seconds / 3)

        async def halt(partition: int) -> None:
            task, done = running.pop(partition)
            done.set()
            await asyncio.gather(task, return_exceptions=True)

        async def hand_back(partition: int) -> None:
            await halt(partition)
            await leases.release(partition)

        try:
            while not stop.is_set():
                try:
                    lost = await leases.heartbeat()
                except Exception:
                    log.exception("could not renew the partition leases")
                    lost = {p for p, held in leases.held.items() if not held.fresh()}
                    with contextlib.suppress(Exception):
                        await leases.reopen()
                for partition in sorted(lost):
                    # Renewal failed or another replica took it: stop writing, forget it.
                    log.error("lost the lease of append partition %d", partition)
                    metrics.LEASES_LOST.inc()
                    if partition in running:
                        await halt(partition)
                    leases.forget(partition)
                for partition, (task, _) in list(running.items()):
                    if task.done():  # a partition loop that crashed or was fenced
                        await hand_back(partition)
                taken, give_back = await leases.rebalance(set(running))
                for partition in give_back:
                    await hand_back(partition)
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
            await leases.close()
            sweeper.cancel()

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
                max_deliver=20,
                max_ack_pending=20_000,
            ),
        )
        lag = LagProbe(self.names.append_stream, durable)
        # The door state of this partition's workspaces lives in ``held`` while the lease
        # does, and goes with it (docs/adr/0021).
        try:
            while not done.is_set() and not held.fenced:
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
