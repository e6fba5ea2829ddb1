"""One workspace's batch: decided by the door, written in one transaction, fenced.

Requests for one workspace that arrive together are appended in one transaction (group
commit, docs/architecture/design.md §2), decided by the door in memory, where one refusal
is undone without touching its neighbours (docs/adr/0021); every commit is fenced by the
partition lease's epoch (docs/adr/0022). A batch the state in memory can decide is one
guarded statement (ADR 0105); any other locks the head row and reads what memory lacks.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta
from typing import Any

import psycopg
from opentelemetry import trace
from opentelemetry.util.types import AttributeValue
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common import otel
from chips_common.append import AppendAnswer, AppendRequest
from chips_common.clock import utcnow
from chips_common.db.direct import Conn, Direct
from chips_common.db.retry import once_more
from chips_common.events import LoggedJson
from chips_eventlog import metrics, state_store, store
from chips_eventlog.door import Door
from chips_eventlog.keys import Seen, check_reuse
from chips_eventlog.leases import Fenced, Held, fence
from chips_eventlog.pending import Pending
from chips_eventlog.publishing import Publishing
from chips_eventlog.refused import Refused
from chips_eventlog.state import DoorState

log = logging.getLogger(__name__)
tracer = otel.tracer("chips.eventlog")


# How long after a key met in the table a partition's batches read their keys first.
RESENDS_SECONDS = 5.0


class Commit(Publishing):
    """The append loop's commit part."""

    fast_engine: AsyncEngine
    direct: Direct | None
    ask_wait: timedelta

    async def append_group(self, workspace_id: str, items: list[Pending], held: Held) -> None:
        """Append every request in ``items`` in one transaction, and trace the commit.

        The commit of one request is a child of its append span; of several, one span
        linked to each append span (docs/adr/0170), which ``chips trace`` draws under each.
        """
        started = time.time_ns()
        await self._append_group(workspace_id, items, held)
        ended = time.time_ns()
        metrics.BATCH_SECONDS.observe((ended - started) / 1e9)
        metrics.BATCH_SIZE.observe(len(items))
        attributes: dict[str, AttributeValue] = {
            otel.WORKSPACE_ID: workspace_id,
            "chips.batch_size": len(items),
        }
        if len(items) == 1:
            tracer.start_span(
                "eventlog.commit",
                context=trace.set_span_in_context(items[0].span),
                start_time=started,
                attributes=attributes,
            ).end(end_time=ended)
            return
        links = [trace.Link(item.span.get_span_context()) for item in items]
        for span in otel.linked_spans(
            tracer, "eventlog.commit", links, start_time=started, attributes=attributes
        ):
            span.end(end_time=ended)

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
            if state.principals_changed():
                for item in items:
                    item.principals_changed = True
            state.settle(
                head_seq,
                [
                    (
                        (p.request.credential_id, p.request.idempotency_key),
                        p.answer.seqs,
                        p.request.fingerprint,
                    )
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
        fresh_keys: list[store.KeyRow] = []
        for item in items:
            req = item.request
            item.answer, item.published = self._append_one(door, req, item.traceparent)
            if item.answer.ok:
                fresh_keys.append(
                    {
                        "credential_id": req.credential_id,
                        "key": req.idempotency_key,
                        "seqs": item.answer.seqs,
                        "fingerprint": req.fingerprint,
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
                    or e["type"] in ("space.erased", "agent.registered")
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
            seen: dict[tuple[str, str], Seen] = {}
            if state is not None:
                known = state.keys
                seen = {k: Seen(workspace_id, *known[k]) for k in keys if k in known}
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
            fresh_keys: list[store.KeyRecord] = []
            for item in items:
                req = item.request
                key = (req.credential_id, req.idempotency_key)
                if key in seen:
                    item.answer = await self._duplicate(conn, req, seen[key], items)
                    continue
                item.answer, item.published = self._append_one(door, req, item.traceparent)
                if item.answer.ok:
                    seqs = item.answer.seqs
                    seen[key] = Seen(workspace_id, seqs, req.fingerprint)
                    fresh_keys.append(
                        {
                            "credential_id": req.credential_id,
                            "key": req.idempotency_key,
                            "workspace_id": workspace_id,
                            "seqs": seqs,
                            "created_at": now,
                            "fingerprint": req.fingerprint,
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
                        or e["type"] in ("space.erased", "agent.registered")
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
        seen: Seen,
        items: list[Pending],
    ) -> AppendAnswer:
        """The answer to a key seen before: the events it logged, marked a duplicate; or,
        for another request under that key, its refusal (docs/adr/0126)."""
        if (reused := check_reuse(seen, req.fingerprint)) is not None:
            return AppendAnswer.refused(
                req.request_id, reused.code, reused.message, reused.field, reused.data
            )
        seen_workspace, seqs, _ = seen
        events = [e for p in items for e in p.published if e["seq"] in seqs]
        if not events:
            events = await store.read_events(conn, seen_workspace, seqs)
        return AppendAnswer(
            request_id=req.request_id, ok=True, seqs=seqs, events=events, duplicate=True
        )

    @staticmethod
    def _append_one(
        door: Door, req: AppendRequest, traceparent: str | None
    ) -> tuple[AppendAnswer, list[LoggedJson]]:
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
