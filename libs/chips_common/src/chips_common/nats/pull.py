"""A durable pull consumer's messages as they come, with its pull requests kept open.

nats-py's ``fetch`` asks twice for every batch it returns: a ``no_wait`` request, whose
"no messages" answer comes back at once when the consumer is caught up, then a lingering
one that the next message ends. On a consumer that keeps up (every service here, most of
the time) that is three protocol messages more per event and per consumer, each one a
write on a socket for the client and for the server (docs/adr/0116).

:class:`Flow` asks once for up to ``batch`` messages that may come over the next
``expires`` seconds and asks again when fewer than ``batch`` are still asked for; the
messages land in the subscription's queue as they are published, and :meth:`Flow.next`
hands out what is there (at least one, at most ``batch``). An idle consumer costs one
request and one "request timeout" answer per ``expires``.

What was asked for is counted by :class:`Asks`, a pure ledger: a message uses up the
oldest open request's credit (the server fills requests in the order they came), a 408 or
404 answer ends the oldest, any other status ends them all (the server forgot them: a
leader changed, the consumer was deleted; for a deleted one, or a request nobody serves,
the loop is told so and declares its consumer again), and a request past its expiry is
forgotten here too, in case its answer was lost (a reconnect). Counting too little asks again
(harmless: a few more messages buffered); counting too much could only wait out an
expiry, which is why it is short.

A consumer that may fold late (its reads ask for what they wait for, docs/adr/0168) can
be paced (``pace`` seconds, :class:`Pace`): instead of having every event pushed to it as
it is published, a wake-up each, it asks for one message with a lingering request, then
for nothing until ``pace`` seconds after that message came, then for everything waiting
with one ``no_wait`` request (again at once while they come in full pages), and so on:
one request and one burst per ``pace`` while events come, the same lingering request as
before while none do. :meth:`Flow.wake` makes a paced flow ask at once.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypedDict

import orjson
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import Header

# Status headers JetStream answers a pull request with (no payload, no reply subject).
STATUS = "Status"
HEARTBEAT = "100"
ENDS_OLDEST = ("404", "408")  # no messages (no_wait) / request expired
NO_RESPONDERS = "503"  # nobody serves the request's subject: the consumer is not there


class ConsumerGone(Exception):
    """The server said the consumer is no more (409 Consumer Deleted, or 503: nobody serves
    its requests): declare it again."""


class Asks:
    """What the open pull requests may still bring, oldest first."""

    def __init__(self, batch: int, expires: float, clock: Callable[[], float] = time.monotonic):
        self.batch = batch
        self.expires = expires
        self.clock = clock
        self.open: deque[list[float]] = deque()  # [credit left, expiry]

    def credit(self) -> int:
        now = self.clock()
        while self.open and self.open[0][1] <= now:
            self.open.popleft()
        return int(sum(a[0] for a in self.open))

    def wanted(self) -> int:
        """How many to ask for now: ``batch`` when fewer than that are still asked for."""
        return self.batch if self.credit() < self.batch else 0

    def asked(self, n: int) -> None:
        self.open.append([float(n), self.clock() + self.expires])

    def delivered(self) -> None:
        if self.open:
            self.open[0][0] -= 1
            if self.open[0][0] <= 0:
                self.open.popleft()

    def status(self, code: str, description: str = "") -> None:
        """A status answer: what it ends. Raises ConsumerGone when the consumer is gone."""
        if code == HEARTBEAT:
            return
        if code in ENDS_OLDEST:
            if self.open:
                self.open.popleft()
            return
        self.open.clear()
        if code == NO_RESPONDERS or "consumer deleted" in description.lower():
            raise ConsumerGone(description.strip() or f"status {code}")


class PullRequest(TypedDict, total=False):
    """A pull request's body, as JetStream reads it."""

    batch: int
    expires: int  # nanoseconds
    no_wait: bool


# A paced flow's states (:class:`Pace`).
IDLE, COLLECT, FETCH = "idle", "collect", "fetch"


class Pace:
    """When a paced flow asks, and for what. Pure but for the clock it is given.

    ``idle``: one lingering request for one message is open; the message that ends it
    starts ``collect``: nothing is asked for until ``every`` seconds after it came (or
    until :meth:`now`); then ``fetch``: one ``no_wait`` request for up to ``batch``. A page
    that came full is followed by another at once; one that brought some, by ``collect``
    again; one that brought none, by ``idle``.
    """

    def __init__(
        self, every: float, batch: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.every, self.batch, self.clock = every, batch, clock
        self.state = IDLE
        self.quiet_until = 0.0
        self.brought = 0

    def ask(self, credit: int) -> PullRequest | None:
        """The pull request to send now, or None (one is open, or it is not time)."""
        if credit > 0:
            return None
        if self.state == FETCH:
            if self.brought >= self.batch:  # a full page: more may be waiting
                self.brought = 0
                return {"batch": self.batch, "no_wait": True}
            if self.brought > 0:
                self.state, self.quiet_until = COLLECT, self.clock() + self.every
            else:
                self.state = IDLE
        if self.state == COLLECT:
            if self.clock() < self.quiet_until:
                return None
            self.state, self.brought = FETCH, 0
            return {"batch": self.batch, "no_wait": True}
        return {"batch": 1}

    def came(self) -> None:
        """A message came."""
        if self.state == IDLE:
            self.state, self.quiet_until = COLLECT, self.clock() + self.every
        elif self.state == FETCH:
            self.brought += 1

    def now(self) -> None:
        """Ask for what is waiting at once (a reader waits for it). While idle the open
        request brings the next message at once anyway."""
        self.quiet_until = 0.0

    def wait(self, longest: float) -> float:
        """How long to wait for a message before asking again, at most ``longest``."""
        if self.state == COLLECT:
            return max(0.0, min(longest, self.quiet_until - self.clock()))
        return longest


class _Wake:
    """What :meth:`Flow.wake` puts in the queue: no message, only a reason to return."""

    data = b""
    headers = None


WAKE: Any = _Wake()


class Flow:
    """Messages of a pull subscription as they arrive, pull requests kept open.

    :meth:`wake` makes a waiting :meth:`next` return at once, with what it has (perhaps
    nothing): the loop has something else to do (a nudge, docs/adr/0168).
    """

    def __init__(
        self,
        sub: JetStreamContext.PullSubscription,
        batch: int,
        expires: float = 2.0,
        pace: float = 0.0,
    ) -> None:
        self.sub = sub
        self.asks = Asks(batch, expires)
        self.pace = Pace(pace, batch) if pace > 0 else None
        # nats-py's own: the subscription's queue, the request subject and the inbox its
        # answers come to (``fetch`` uses the same three).
        self.queue: asyncio.Queue[Msg] = sub._sub._pending_queue
        self.subject: str = sub._nms
        self.inbox: str = sub._deliver
        self.woken = False

    def wake(self) -> None:
        """Have :meth:`next` return now (at once if it waits; else the next time it would)."""
        try:
            self.queue.put_nowait(WAKE)
        except asyncio.QueueFull:  # messages wait: next returns with them anyway
            self.woken = True

    async def ask(self) -> None:
        request: PullRequest | None
        if self.pace is not None:
            request = self.pace.ask(self.asks.credit())
        else:
            n = self.asks.wanted()
            request = {"batch": n} if n else None
        if request is None:
            return
        if not request.get("no_wait"):
            request["expires"] = int(self.asks.expires * 1e9)
        await self.sub._nc.publish(self.subject, orjson.dumps(request), reply=self.inbox)
        self.asks.asked(request["batch"])

    async def next(self, timeout: float) -> list[Msg]:
        """At least one message and at most ``batch``, or TimeoutError after ``timeout``;
        woken (:meth:`wake`), what has come by then, perhaps nothing."""
        msgs: list[Msg] = []
        deadline = time.monotonic() + timeout
        while not msgs:
            await self.ask()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if not self.queue.empty():
                # What ``get`` would return at once, without arming a timeout for it.
                first = self.queue.get_nowait()
            else:
                longest = (
                    self.asks.expires if self.pace is None else self.pace.wait(self.asks.expires)
                )
                try:
                    async with asyncio.timeout(min(left, longest)):
                        first = await self.queue.get()
                except TimeoutError:
                    continue  # the deadline, or an expiry passed: ask again, or give up
            self.take(first, msgs)
            while len(msgs) < self.asks.batch and not self.queue.empty():
                self.take(self.queue.get_nowait(), msgs)
            if self.woken:
                self.woken = False
                break
        return msgs

    async def give_back(self) -> int:
        """Nak what arrived and was not handed out (on the way out), so the server hands it
        out again at once rather than after its ack wait. Returns how many."""
        given = 0
        while not self.queue.empty():
            msgs: list[Msg] = []
            self.take(self.queue.get_nowait(), msgs)
            for msg in msgs:
                await msg.nak()
                given += 1
        return given

    def take(self, msg: Msg, into: list[Msg]) -> None:
        if msg is WAKE:
            self.woken = True
            if self.pace is not None:
                self.pace.now()
            return
        self.sub._sub._pending_size -= len(msg.data)
        status = msg.headers.get(STATUS) if msg.headers else None
        if status is None:
            self.asks.delivered()
            if self.pace is not None:
                self.pace.came()
            into.append(msg)
        else:
            # nats-py keys the description by its own enum member, not the plain string.
            headers = msg.headers or {}
            self.asks.status(status, headers.get(Header.DESCRIPTION) or "")
