"""Intake: the requests one fetch brought, grouped, appended, answered and acked.

Right after a group's commit its requests are answered and acked, all together, and its
events handed to the publisher. A request handed out more than ``ISOLATE_AFTER`` times goes
alone; one that fails every time is answered with ``internal`` and set aside on the
dead-letter stream once its deliveries or its time run out (docs/adr/0025).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from datetime import UTC, datetime

from nats.aio.msg import Msg
from opentelemetry.trace import SpanKind
from pydantic import ValidationError
from sqlalchemy.exc import IntegrityError

from chips_common import otel
from chips_common.append import AppendAnswer, AppendRequest, answer_json
from chips_common.db.away import database_away
from chips_common.nats.connect import ack_all
from chips_common.nats.streams import HDR_REPLY, HDR_TRACEPARENT
from chips_eventlog import metrics
from chips_eventlog.commit import Commit
from chips_eventlog.heard import Waiter
from chips_eventlog.leases import Fenced, Held
from chips_eventlog.pending import Pending

log = logging.getLogger(__name__)
tracer = otel.tracer("chips.eventlog")


# Deliveries after which a request is appended alone rather than with its batch.
ISOLATE_AFTER = 2


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


def backoff(delivered: int) -> float:
    """How long a failed request waits before its next delivery: 50 ms, doubling, ≤ 0.5 s."""
    return float(min(0.05 * 2 ** max(0, delivered - 1), 0.5))


class Intake(Commit):
    """The append loop's intake part."""

    max_deliver: int
    request_cap: float
    delivery_cap: float

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
        # ``asyncio.timeout`` rather than ``wait_for``, which (Python 3.11) makes a task of
        # every append (docs/adr/0162).
        try:
            async with asyncio.timeout(self.delivery_cap):
                await self.append_group(workspace_id, items, held)
        except TimeoutError:
            raise TimeoutError(f"the append took longer than {self.delivery_cap:g} s") from None

    async def committed(self, items: list[Pending]) -> None:
        """Publish a committed group's events, then answer and ack every request in it.

        Nothing here waits on the network (docs/adr/0024): the events, then the answers
        and acks, are written to the NATS connection, which sends them together and in
        that order, so an event is on its way to the gateways before its writer hears the
        ack. The publisher task awaits the stream's acks and clears the outbox. The one
        wait: a group that changed who a workspace's tokens are is answered once every
        gateway said it forgot them (docs/adr/0172).
        """
        asked: list[tuple[str, Waiter]] = []
        for workspace_id in {i.request.workspace_id for i in items if i.principals_changed}:
            notice = await self.notice_principals(workspace_id)
            if notice is not None:
                asked.append(notice)
        traced = [(e, item.traceparent) for item in items if item.answer for e in item.published]
        sent = await self.send_events(traced)
        if asked:
            await self.heard.wait(asked)
        answered = [(item.msg, item.answer) for item in items if item.answer is not None]
        for msg, answer in answered:
            await self.reply(msg, answer)
        await ack_all([msg for msg, _ in answered])  # one write for the batch's acks
        for item in items:
            if item.answer is not None:
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
        if database_away(exc):
            # Not the request's fault, and nothing was logged: its writer is told to send
            # it again (with its key, so a commit whose answer was lost is a duplicate).
            log.warning("Postgres is away; %s is answered unavailable", item.request.request_id)
            await self.reply(
                item.msg,
                AppendAnswer.refused(
                    item.request.request_id,
                    "unavailable",
                    "the log of record (its database) is not reachable right now; "
                    "send it again shortly with the same idempotency key",
                ),
            )
            metrics.appended("unavailable", len(item.request.events))
            await item.msg.term()
            return
        log.error("giving up on %s (%s): %r", item.request.request_id, why, exc)
        answer = AppendAnswer.refused(
            item.request.request_id,
            "internal",
            f"Chips could not log this ({why}); it was set aside for an operator, "
            "sending it again will not help",
        )
        await self.reply(item.msg, answer)
        metrics.appended("failed", len(item.request.events))
        await self.dead_letter(item.msg, f"{why}: {exc!r}"[:500])

    @staticmethod
    def record(item: Pending) -> None:
        answer = item.answer
        assert answer is not None
        outcome = "duplicate" if answer.duplicate else ("ok" if answer.ok else "refused")
        metrics.appended(outcome, len(item.request.events))
        if answer.seqs:
            item.span.set_attribute(otel.SEQ, answer.seqs[-1])
        if answer.events and "message_id" in answer.events[-1]:
            item.span.set_attribute(otel.MESSAGE_ID, answer.events[-1]["message_id"])
        if not answer.ok:
            item.span.set_attribute("chips.refused", answer.code or "")

    async def reply(self, msg: Msg, answer: AppendAnswer) -> None:
        """Write the answer to the requester's reply subject.

        A NATS publish only fills the connection's buffer (it does not wait for the
        server), so the answers and acks of a batch leave together on the next flush.
        """
        reply = (msg.headers or {}).get(HDR_REPLY)
        if reply:
            await self.nc.publish(reply, answer_json(answer))

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
