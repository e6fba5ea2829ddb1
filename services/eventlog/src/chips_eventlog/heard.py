"""Every gateway has heard a principals notice before its change's writer is answered
(docs/adr/0172).

A gateway remembers who tokens are (docs/adr/0169) and forgets a workspace's when the
eventlog's notice names it. NATS keeps one connection's messages in order for each
receiver, but not across receivers: the gateway that asked may hear its answer, and its
client may ask another gateway, before that one has handled the notice. So the notice
asks for a reply, each gateway replies once it has forgotten, and the answers of the batch
wait until every gateway the eventlog knows of has replied, or ``cap`` seconds.

Which gateways there are, the eventlog learns from them: each says it is here when it
starts and every ``HERE_EVERY`` seconds, says when it goes, and is no longer waited for
once it has not been heard for ``HERE_LAPSE`` (:class:`chips_common.nats.principals.Listeners`)
or has let a notice go unanswered for ``cap`` seconds, until it is heard from again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from chips_common.nats.principals import Listeners, heard_here, unconfirmed
from chips_common.nats.streams import Names
from chips_eventlog import metrics

log = logging.getLogger(__name__)

# How long a change's answers wait for the gateways' replies at most: a gateway that is
# hung, or gone without a word, delays them this long and no longer.
CONFIRM_CAP = 2.0


@dataclass
class Waiter:
    """One notice's replies: from whom they are awaited, and from whom they came."""

    expected: frozenset[str]
    confirmed: set[str] = field(default_factory=set)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def reply(self, replica: str) -> None:
        self.confirmed.add(replica)
        if not unconfirmed(self.expected, self.confirmed):
            self.done.set()


class Heard:
    """The gateways that listen for notices, and the replies each notice waits for."""

    def __init__(
        self,
        nc: NATS,
        names: Names,
        cap: float = CONFIRM_CAP,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.nc = nc
        self.names = names
        self.cap = cap
        self.clock = clock
        self.listeners = Listeners()
        self.waiting: dict[str, Waiter] = {}
        self.inbox = ""
        self.sent = 0

    async def start(self) -> None:
        """Hear the gateways say they are here, and their replies to notices."""

        async def here(msg: Msg) -> None:
            said = heard_here(msg.data)
            if said is None:
                log.warning("a gateway's word that names no replica: %r", msg.data[:200])
            elif said[1]:
                self.listeners.gone(said[0])
            else:
                self.listeners.heard(said[0], self.clock())

        async def replied(msg: Msg) -> None:
            said = heard_here(msg.data)
            if said is None:
                return
            self.listeners.heard(said[0], self.clock())
            waiter = self.waiting.get(msg.subject.rpartition(".")[2])
            if waiter is not None:
                waiter.reply(said[0])

        self.inbox = self.nc.new_inbox()
        await self.nc.subscribe(self.names.gateways_subject, cb=here)
        await self.nc.subscribe(f"{self.inbox}.*", cb=replied)

    def ask(self) -> tuple[str, Waiter | None]:
        """The reply subject for a notice about to be sent, and its waiter: None before
        :meth:`start`, when nothing can be heard."""
        if not self.inbox:
            return "", None
        self.sent += 1
        token = str(self.sent)
        waiter = Waiter(self.listeners.expected(self.clock()))
        if not waiter.expected:
            waiter.done.set()
        self.waiting[token] = waiter
        return f"{self.inbox}.{token}", waiter

    def drop(self, reply: str) -> None:
        """Stop tracking a notice nobody waits for (one sent when taking a lease)."""
        self.waiting.pop(reply.rpartition(".")[2], None)

    async def wait(self, waiters: list[tuple[str, Waiter]]) -> None:
        """Until every expected gateway replied to each notice, or ``cap`` seconds."""
        deadline = self.clock() + self.cap
        for reply, waiter in waiters:
            try:
                if not waiter.done.is_set():
                    async with asyncio.timeout(max(0.0, deadline - self.clock())):
                        await waiter.done.wait()
            except TimeoutError:
                missing = sorted(unconfirmed(waiter.expected, waiter.confirmed))
                log.warning(
                    "gateways %s did not say they heard a principals notice within %g s",
                    missing,
                    self.cap,
                )
                metrics.PRINCIPALS_UNCONFIRMED.inc(len(missing))
                # Not waited for again until heard from: a gateway killed without a word
                # delays one change by the cap, not every change until it lapses.
                for replica in missing:
                    self.listeners.gone(replica)
            finally:
                self.drop(reply)
