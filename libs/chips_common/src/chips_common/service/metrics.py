"""Metrics every consuming service shares."""

from __future__ import annotations

import time

from nats.js import JetStreamContext
from prometheus_client import Gauge

CONSUMER_LAG = Gauge(
    "chips_consumer_lag",
    "Messages the consumer has not yet been delivered (num_pending), per stream",
    ["stream", "consumer"],
)
CONSUMER_UNACKED = Gauge(
    "chips_consumer_ack_pending",
    "Messages delivered to the consumer and not yet acked, per stream",
    ["stream", "consumer"],
)


class LagProbe:
    """Reads a consumer's lag from JetStream at most every ``every`` seconds."""

    def __init__(self, stream: str, consumer: str, every: float = 5.0) -> None:
        self.stream = stream
        self.consumer = consumer
        self.every = every
        self.last = 0.0

    async def maybe_update(self, js: JetStreamContext) -> None:
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        try:
            info = await js.consumer_info(self.stream, self.consumer)
        except Exception:  # a probe never breaks the consumer
            return
        CONSUMER_LAG.labels(self.stream, self.consumer).set(info.num_pending or 0)
        CONSUMER_UNACKED.labels(self.stream, self.consumer).set(info.num_ack_pending or 0)
