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
import json
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig
from pydantic import ValidationError
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.append import AppendAnswer, AppendRequest
from chips_common.clock import utcnow
from chips_common.nats.streams import HDR_MSG_ID, HDR_REPLY, HDR_TRACEPARENT, Names
from chips_eventlog import store
from chips_eventlog.door import Door, Refused

log = logging.getLogger(__name__)


@dataclass
class Pending:
    msg: Msg
    request: AppendRequest
    answer: AppendAnswer | None = None
    published: list[dict[str, Any]] = field(default_factory=list)


class Appender:
    def __init__(self, engine: AsyncEngine, nc: NATS, js: JetStreamContext, names: Names) -> None:
        self.engine = engine
        self.nc = nc
        self.js = js
        self.names = names
        self.outbox_lock = asyncio.Lock()

    # --- one workspace's batch -----------------------------------------------------

    async def append_group(self, workspace_id: str, items: list[Pending]) -> None:
        """Append every request in ``items`` in one transaction."""
        now = utcnow()
        async with self.engine.begin() as conn:
            creates = any(
                e.get("type") == "workspace.created" for p in items for e in p.request.events
            )
            head = await store.lock_head(conn, workspace_id, create=creates, now=now)
            door = Door(conn, workspace_id, head or 0, now)
            for item in items:
                req = item.request
                seen = await store.find_key(conn, req.credential_id, req.idempotency_key)
                if seen is not None:
                    seen_workspace, seqs = seen
                    events = await store.read_events(conn, seen_workspace, seqs)
                    item.answer = AppendAnswer(
                        request_id=req.request_id,
                        ok=True,
                        seqs=seqs,
                        events=events,
                        duplicate=True,
                    )
                    continue
                if head is None:
                    item.answer = AppendAnswer.refused(
                        req.request_id, "not_found", "no such workspace", "workspace_id"
                    )
                    continue
                head_before = door.head_seq
                savepoint = await conn.begin_nested()
                try:
                    events = await door.append(req)
                    await store.save_key(
                        conn,
                        req.credential_id,
                        req.idempotency_key,
                        workspace_id,
                        [e["seq"] for e in events],
                        now,
                    )
                except Refused as refusal:
                    await savepoint.rollback()
                    door.head_seq = head_before
                    item.answer = AppendAnswer.refused(
                        req.request_id, refusal.code, refusal.message, refusal.field
                    )
                    continue
                await savepoint.commit()
                item.published = events
                item.answer = AppendAnswer(
                    request_id=req.request_id,
                    ok=True,
                    seqs=[e["seq"] for e in events],
                    events=events,
                )
            if door.head_seq > 0:
                await store.save_head(conn, workspace_id, door.head_seq)
            elif creates:
                await store.drop_empty_workspace(conn, workspace_id)

    # --- the loop --------------------------------------------------------------------

    async def handle_batch(self, msgs: list[Msg]) -> None:
        groups: OrderedDict[str, list[Pending]] = OrderedDict()
        for msg in msgs:
            try:
                request = AppendRequest.model_validate_json(msg.data)
            except ValidationError as exc:
                await self.dead_letter(msg, f"not an append request: {exc.errors()[0]['msg']}")
                continue
            groups.setdefault(request.workspace_id, []).append(Pending(msg, request))

        for workspace_id, items in groups.items():
            try:
                await self.append_group(workspace_id, items)
            except IntegrityError:
                # Two requests raced on a key or an id: append them one by one instead.
                for item in items:
                    item.answer, item.published = None, []
                    try:
                        await self.append_group(workspace_id, [item])
                    except Exception:
                        log.exception("append failed for %s", item.request.request_id)
                        await item.msg.nak(delay=1)
                        item.answer = None
            except Exception:
                log.exception("append batch failed for workspace %s", workspace_id)
                for item in items:
                    await item.msg.nak(delay=1)
                continue
            await self.publish([e for item in items for e in item.published])
            for item in items:
                if item.answer is None:
                    continue
                await self.answer(item.msg, item.answer)
                await item.msg.ack()

    async def publish(self, events: list[dict[str, Any]]) -> None:
        """Publish committed events without awaiting each ack in turn, then clear the outbox."""
        if not events:
            return
        acks = [
            self.js.publish(
                self.names.events_subject(e["workspace_id"]),
                json.dumps(e, separators=(",", ":")).encode(),
                headers={HDR_MSG_ID: e["id"]},
            )
            for e in events
        ]
        results = await asyncio.gather(*acks, return_exceptions=True)
        done = [e for e, r in zip(events, results, strict=True) if not isinstance(r, BaseException)]
        if len(done) < len(events):
            log.warning("%d events left in the outbox for the sweeper", len(events) - len(done))
        await store.mark_published(self.engine, done)

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
                events = await store.unpublished(self.engine)
                if not events:
                    return total
                await self.publish(events)
                total += len(events)

    async def run(
        self, stop: asyncio.Event, batch_size: int, sweep_seconds: float, ack_wait: float
    ) -> None:
        sub = await self.js.pull_subscribe(
            self.names.append_wildcard,
            durable=self.names.consumer("eventlog"),
            stream=self.names.append_stream,
            config=ConsumerConfig(
                ack_policy=AckPolicy.EXPLICIT,
                ack_wait=ack_wait,
                max_deliver=20,
                max_ack_pending=20_000,
            ),
        )
        swept = await self.sweep_outbox()
        if swept:
            log.info("re-published %d events from the outbox", swept)
        sweeper = asyncio.create_task(self._sweep_every(stop, sweep_seconds))
        try:
            while not stop.is_set():
                try:
                    msgs = await sub.fetch(batch_size, timeout=1)
                except (TimeoutError, NatsTimeout):
                    continue
                await self.handle_batch(msgs)
        finally:
            sweeper.cancel()
            await sub.unsubscribe()

    async def _sweep_every(self, stop: asyncio.Event, seconds: float) -> None:
        while not stop.is_set():
            await asyncio.sleep(seconds)
            try:
                await self.sweep_outbox()
            except Exception:
                log.exception("outbox sweep failed")
