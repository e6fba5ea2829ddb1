"""A failing workspace's messages settled: naked with a growing delay, or its poison event
dead-lettered and read past (``poison.py``, docs/adr/0148). The consumer runtime's
(``consumer.py``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import orjson
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from chips_common.nats.connect import ack_all
from chips_common.nats.streams import Names
from chips_common.service import poison
from chips_common.service.poison import FoldFailed, Limits

log = logging.getLogger("chips_common.service.consumer")


# How many poison events of one workspace are set aside in one go before its messages are
# naked (a later delivery goes on from there).
ASIDE_IN_A_ROW = 20


@dataclass
class SetAside:
    """A failing workspace's messages settled: naked with a growing delay, or its poison
    event dead-lettered and read past (``poison.decide``)."""

    nc: NATS
    js: JetStreamContext | None
    names: Names
    service: str
    limits: Limits

    async def settle(
        self,
        workspace_id: str,
        msgs: list[Msg],
        run: Callable[[], Awaitable[None]],
        first: Exception | None = None,
    ) -> None:
        failure = first
        for _ in range(ASIDE_IN_A_ROW):
            if failure is None:
                try:
                    await run()
                except Exception as exc:
                    failure = exc
                else:
                    poison.went_on(workspace_id)
                    await ack_all(msgs)
                    return
            named = isinstance(failure, FoldFailed) and failure.workspace_id == workspace_id
            delivered = max(poison.deliveries(m) for m in msgs)
            age = max(poison.age_seconds(m) for m in msgs)
            now = time.monotonic()
            tried, waited = poison.tries(delivered, age, poison.last_aside(workspace_id), now)
            verdict = poison.decide(self.limits, tried, waited, named)
            if isinstance(verdict, poison.Retry):
                log.error(
                    "%s: %s failed (delivery %d); again in %.2fs",
                    self.service,
                    workspace_id,
                    delivered,
                    verdict.delay,
                    exc_info=failure,
                )
                for msg in msgs:
                    await msg.nak(delay=verdict.delay)
                return
            assert isinstance(failure, FoldFailed)
            await self.dead_letter(failure, verdict.reason, tried)
            poison.put_aside(failure.workspace_id, failure.seq, delivered, now)
            failure = None  # the workspace goes on at once, past the event set aside
        for msg in msgs:
            await msg.nak(delay=self.limits.first_delay_seconds)

    async def dead_letter(self, failed: FoldFailed, reason: str, delivered: int) -> None:
        """The event on the dead-letter stream with why, as the append path sets a request
        aside (docs/adr/0025): an operator reads it there."""
        cause = failed.__cause__
        why = f"{self.service}: {reason}: {cause!r}"[:500]
        log.error(
            "%s: setting aside %s at %s/%d: %s",
            self.service,
            failed.event_type,
            failed.workspace_id,
            failed.seq,
            why,
        )
        headers = {
            "Chips-Dead-Reason": why,
            "Chips-Deliveries": str(delivered),
            "Chips-Subject": self.names.events_subject(failed.workspace_id),
            "Chips-Consumer": self.service,
            "Chips-Workspace": failed.workspace_id,
            "Chips-Seq": str(failed.seq),
        }
        data = orjson.dumps(failed.event, default=str)
        if self.js is not None:
            try:
                await self.js.publish(self.names.dead_letter_subject, data, headers=headers)
                return
            except Exception:
                log.exception("the dead-letter stream did not take it; publishing it plainly")
        await self.nc.publish(self.names.dead_letter_subject, data, headers=headers)
