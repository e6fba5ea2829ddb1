"""Who a token is, remembered by this replica between requests (docs/adr/0169).

Every HTTP request carries a token, and asking Postgres who it is cost about a fifth of
the gateway's CPU per post. A replica remembers the answers it was given, for at most
``CHIPS_PRINCIPAL_CACHE_SECONDS``, and forgets them as soon as it may be wrong:

- The eventlog writes every row the answer comes from (``credentials`` and
  ``participants``). When a batch changes one of them (a credential or device revoked, a
  participant renamed, re-roled, made or removed), it publishes a notice naming the
  workspace on core NATS, on the same connection and before the events and the answers,
  and each replica replies once it has forgotten them; the writer hears "done" only once
  every replica that said it is here has replied (docs/adr/0172). When
  it takes a partition's lease (a start, or a takeover after a crash that may have lost
  a notice) it publishes a notice naming every workspace.
- A notice is sent at most once, so nothing is trusted that may have missed one: while
  this replica's NATS connection is down, and for what was learnt before it came back,
  the answer is asked of Postgres again.
- A credential's own expiry is kept with the answer and read on every use.
- Only answers are kept: a token nobody has is asked every time, so a new token works at
  once. A session token's signature and expiry are checked on every request, before its
  device's answer is looked up here.

The decisions are pure (:func:`usable`); :class:`Known` holds the answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from chips_common.db.principals import Principal
from chips_common.nats.principals import EVERY_WORKSPACE, HERE_EVERY, here, noticed

log = logging.getLogger(__name__)

# How many answers one replica keeps at most (the oldest goes first): a few MB.
MOST = 20_000


@dataclass(frozen=True)
class Answer:
    """Who a token was, when it was learnt, and under which connection of NATS."""

    principal: Principal
    learnt: float  # monotonic seconds
    epoch: int


def usable(
    answer: Answer, now: float, wall: datetime, epoch: int | None, keep_seconds: float
) -> bool:
    """Whether a remembered answer may stand for asking Postgres again.

    ``epoch`` is the NATS connection's now (None while it is down): an answer learnt
    under another may have missed a notice. ``wall`` is the time the credential's own
    expiry is read against.
    """
    if epoch is None or answer.epoch != epoch:
        return False
    if now - answer.learnt >= keep_seconds:
        return False
    expires = answer.principal.expires_at
    return expires is None or wall < expires


class Known:
    """The answers this replica remembers, by a token's hash (or a session's device)."""

    def __init__(
        self,
        keep_seconds: float,
        most: int = MOST,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.keep = keep_seconds
        self.most = most
        self.clock = clock
        self.wall = wall
        self.answers: OrderedDict[str, Answer] = OrderedDict()
        self.nc: NATS | None = None
        # How many notices were heard: an answer asked before the last one is not kept.
        self.heard = 0
        self.replica = ""
        self.here_subject = ""
        self.saying: asyncio.Task[None] | None = None

    def epoch(self) -> int | None:
        """The NATS connection's number (its reconnects), or None while it is down or
        before :meth:`start`: no notice can be heard then."""
        nc = self.nc
        if nc is None or not nc.is_connected:
            return None
        return int(nc.stats["reconnects"])

    def get(self, key: str) -> Principal | None:
        if self.keep <= 0:
            return None
        answer = self.answers.get(key)
        if answer is None:
            return None
        if not usable(answer, self.clock(), self.wall(), self.epoch(), self.keep):
            del self.answers[key]
            return None
        return answer.principal

    def stamp(self) -> tuple[int, int | None]:
        """What :meth:`put` checks is unchanged: the notices heard, and the connection."""
        return self.heard, self.epoch()

    def put(self, key: str, principal: Principal, stamp: tuple[int, int | None]) -> None:
        """Remember an answer asked of Postgres at ``stamp`` (:meth:`stamp`). Not kept if a
        notice came since (it may have been about this very answer), nor if the
        connection went meanwhile (one may have been missed)."""
        epoch = stamp[1]
        if self.keep <= 0 or epoch is None or stamp != self.stamp():
            return
        self.answers[key] = Answer(principal, self.clock(), epoch)
        self.answers.move_to_end(key)
        while len(self.answers) > self.most:
            self.answers.popitem(last=False)

    def forget(self, workspace_id: str) -> None:
        """Forget every answer of the workspace (every answer, for ``EVERY_WORKSPACE``)."""
        self.heard += 1
        if workspace_id == EVERY_WORKSPACE:
            self.answers.clear()
            return
        for key in [k for k, a in self.answers.items() if a.principal.workspace_id == workspace_id]:
            del self.answers[key]

    async def start(self, nc: NATS, subject: str, here_subject: str, replica: str) -> None:
        """Listen for the eventlog's notices (before any answer is kept), reply to each once
        its answers are forgotten, and say every ``HERE_EVERY`` seconds that this replica
        listens, so the eventlog waits for its replies (docs/adr/0172)."""

        async def heard(msg: Msg) -> None:
            workspace = noticed(msg.data)
            if workspace is None:
                log.warning("a principals notice that names no workspace: %r", msg.data[:200])
                workspace = EVERY_WORKSPACE
            self.forget(workspace)
            if msg.reply:
                await nc.publish(msg.reply, here(replica))

        await nc.subscribe(subject, cb=heard)
        self.nc = nc
        self.replica = replica
        self.here_subject = here_subject
        await nc.publish(here_subject, here(replica))
        await nc.flush()
        self.saying = asyncio.create_task(self._say_here())

    async def _say_here(self) -> None:
        nc = self.nc
        assert nc is not None
        while True:
            await asyncio.sleep(HERE_EVERY)
            with contextlib.suppress(Exception):  # down: said again once it is back
                await nc.publish(self.here_subject, here(self.replica))

    async def stop(self) -> None:
        """Say this replica no longer listens (the eventlog stops waiting for it)."""
        if self.saying is not None:
            self.saying.cancel()
            await asyncio.gather(self.saying, return_exceptions=True)
            self.saying = None
        if self.nc is not None:
            with contextlib.suppress(Exception):
                await self.nc.publish(self.here_subject, here(self.replica, gone=True))
                await self.nc.flush(timeout=1)
