"""A request in the append loop's hands, and an event on its way to ``CHIPS_EVENTS``.

Shared by the loop's parts (docs/adr/0138): :mod:`chips_eventlog.intake` makes a
:class:`Pending` of each request it pulls, :mod:`chips_eventlog.commit` decides and writes
it, :mod:`chips_eventlog.publishing` sends what it logged.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from nats.aio.msg import Msg
from opentelemetry.trace import Span

from chips_common import otel
from chips_common.append import AppendAnswer, AppendRequest
from chips_common.events import LoggedJson

log = logging.getLogger(__name__)
tracer = otel.tracer("chips.eventlog")


# An event written to CHIPS_EVENTS, and the future of the stream's ack.
Sent = tuple[LoggedJson, "asyncio.Future[Any]"]


@dataclass
class Pending:
    msg: Msg
    request: AppendRequest
    span: Span
    answer: AppendAnswer | None = None
    published: list[LoggedJson] = field(default_factory=list)
    # Its batch changed a credential or a participant: the gateways are told before the
    # answer goes (docs/adr/0169).
    principals_changed: bool = False

    @cached_property
    def traceparent(self) -> str | None:
        """The span's W3C trace context, made once: the door stages it with the events and
        the publisher sends it with them (the span's ids never change)."""
        return otel.traceparent_of(self.span)
