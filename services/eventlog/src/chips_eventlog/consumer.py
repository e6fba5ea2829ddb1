"""The append loop: pull requests, commit them in batches, answer, then publish.

Requests for one workspace that arrive together are appended in one transaction (group
commit, docs/architecture/design.md §2), decided by the door in memory, where one refusal is undone
without touching its neighbours (docs/adr/0021); every commit is fenced by the partition lease's
epoch (docs/adr/0022). Right after the commit the requests are answered and acked, all of
a batch together; the events then go to ``CHIPS_EVENTS`` (``Nats-Msg-Id`` = event id)
from one publisher task, in commit order, and their outbox rows are cleared
(docs/adr/0024). A crash anywhere after the commit is repaired by publishing what the
outbox still holds (on start, and by the sweeper); a redelivered request finds its key and
is answered as a duplicate. A request that fails every time is answered with ``internal``
and set aside on the dead-letter stream once its deliveries or its time run out
(docs/adr/0025).

The :class:`Appender` is its parts, one module by job (docs/adr/0138):
:mod:`chips_eventlog.intake` (a fetch's requests grouped, answered, acked or given up),
:mod:`chips_eventlog.commit` (a workspace's batch decided and written),
:mod:`chips_eventlog.publishing` (the events published, the outbox cleared) and
:mod:`chips_eventlog.partitions` (leases, takeover, a pull loop per partition).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.db.direct import Direct
from chips_common.events import LoggedJson
from chips_common.nats.stored import StoredPublisher
from chips_common.nats.streams import Names
from chips_eventlog.commit import RESENDS_SECONDS
from chips_eventlog.heard import CONFIRM_CAP, Heard
from chips_eventlog.intake import ISOLATE_AFTER, age_seconds, backoff, deliveries, give_up
from chips_eventlog.partitions import TAKEOVER_CHUNK, Partitions
from chips_eventlog.pending import Pending, Sent
from chips_eventlog.publishing import CLEAR_AT_MOST, CLEAR_EVERY, clear_outbox
from chips_eventlog.rules.common import ASK_WAIT

# What the parts' callers and tests name, from here as before.
__all__ = [
    "CLEAR_AT_MOST",
    "CLEAR_EVERY",
    "ISOLATE_AFTER",
    "RESENDS_SECONDS",
    "TAKEOVER_CHUNK",
    "Appender",
    "Pending",
    "Sent",
    "age_seconds",
    "backoff",
    "clear_outbox",
    "deliveries",
    "give_up",
]


class Appender(Partitions):
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
        confirm_cap: float = CONFIRM_CAP,
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
        self.to_clear: list[LoggedJson] = []
        self.clear_due: float | None = None
        self.clear_every = clear_every
        self.clear_at_most = clear_at_most
        # A principals notice could not be sent: one naming every workspace is owed.
        self.principals_owed = False
        # The gateways, and their replies that they heard a principals notice.
        self.heard = Heard(nc, names, confirm_cap)
