"""Streams, subjects and consumers, declared in code and idempotently.

``CHIPS_APPEND`` is a work queue of append requests (``chips.append.<workspace>``);
``CHIPS_EVENTS`` carries committed events (``chips.events.<workspace>``) for live
fan-out; ``CHIPS_DEADLETTER`` keeps the append requests the eventlog gave up on
(``chips.deadletter``), with why in their headers, for an operator. Postgres keeps the
log of record, so ``CHIPS_EVENTS`` only needs to hold what consumers have not read yet.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import BadRequestError, NotFoundError

from chips_common.config import Settings

# Header names carried on append requests and committed events.
HDR_REPLY = "Chips-Reply-To"
HDR_MSG_ID = "Nats-Msg-Id"
HDR_TRACEPARENT = "traceparent"

# Consumers of CHIPS_EVENTS, one durable per service that folds the log.
CONSUMERS = ("projector", "search", "referee", "attachments")


@dataclass(frozen=True)
class Names:
    """Every stream, subject and consumer name, derived from the configured prefixes."""

    stream_prefix: str
    subject_prefix: str
    partitions: int = 8
    # Copies of each stream JetStream keeps (R3 on a three-node cluster, docs/adr/0041).
    replicas: int = 1

    @classmethod
    def from_settings(cls, settings: Settings) -> Names:
        return cls(
            settings.stream_prefix,
            settings.subject_prefix,
            settings.append_partitions,
            settings.stream_replicas,
        )

    def partition_of(self, workspace_id: str) -> int:
        """The append partition a workspace's requests go to (a stable hash)."""
        return zlib.crc32(workspace_id.encode()) % self.partitions

    @property
    def append_stream(self) -> str:
        return f"{self.stream_prefix}_APPEND"

    @property
    def events_stream(self) -> str:
        return f"{self.stream_prefix}_EVENTS"

    @property
    def dead_letter_stream(self) -> str:
        """Append requests the eventlog gave up on, and events a consumer of the log set
        aside (docs/adr/0025, docs/adr/0148), kept for an operator to read."""
        return f"{self.stream_prefix}_DEADLETTER"

    def append_subject(self, workspace_id: str) -> str:
        return f"{self.subject_prefix}.append.{self.partition_of(workspace_id)}.{workspace_id}"

    def append_partition_subject(self, partition: int) -> str:
        return f"{self.subject_prefix}.append.{partition}.>"

    def events_subject(self, workspace_id: str) -> str:
        return f"{self.subject_prefix}.events.{workspace_id}"

    @property
    def append_wildcard(self) -> str:
        return f"{self.subject_prefix}.append.>"

    @property
    def events_wildcard(self) -> str:
        return f"{self.subject_prefix}.events.>"

    @property
    def disconnected_subject(self) -> str:
        """Core NATS (no stream): every gateway closes a disconnected harness's sockets."""
        return f"{self.subject_prefix}.notice.disconnected"

    @property
    def restart_subject(self) -> str:
        """Core NATS (no stream): every gateway sends a harness's sockets a restart frame."""
        return f"{self.subject_prefix}.notice.restart"

    @property
    def principals_subject(self) -> str:
        """Core NATS (no stream): the eventlog names a workspace whose credentials or
        participants changed, and every gateway forgets who its tokens were."""
        return f"{self.subject_prefix}.notice.principals"

    @property
    def gateways_subject(self) -> str:
        """Core NATS (no stream): each gateway says it listens for principals notices (or
        that it no longer does), so the eventlog waits for its reply to each."""
        return f"{self.subject_prefix}.notice.gateway"

    @property
    def dead_letter_subject(self) -> str:
        return f"{self.subject_prefix}.deadletter"

    def reply_subject(self, gateway_id: str) -> str:
        return f"{self.subject_prefix}.reply.{gateway_id}"

    def consumer(self, name: str) -> str:
        return f"{self.stream_prefix.lower()}_{name}"


def stream_configs(names: Names) -> list[StreamConfig]:
    """Every stream Chips creates. Each is kept on ``names.replicas`` nodes: on a three-node
    cluster a stream with one copy goes offline with its node, which a drain may take."""
    return [
        StreamConfig(
            name=names.append_stream,
            subjects=[names.append_wildcard],
            retention=RetentionPolicy.WORK_QUEUE,
            storage=StorageType.FILE,
            max_age=24 * 3600,
            num_replicas=names.replicas,
        ),
        StreamConfig(
            name=names.events_stream,
            subjects=[names.events_wildcard],
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            max_age=7 * 24 * 3600,
            duplicate_window=120,
            num_replicas=names.replicas,
        ),
        StreamConfig(
            name=names.dead_letter_stream,
            subjects=[names.dead_letter_subject],
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            max_age=30 * 24 * 3600,
            max_msgs=100_000,
            num_replicas=names.replicas,
        ),
    ]


async def declare_streams(js: JetStreamContext, names: Names) -> None:
    """Create or update every stream; safe to call from every service at start."""
    for config in stream_configs(names):
        try:
            await js.add_stream(config)
        except BadRequestError:
            await js.update_stream(config)


async def declare_consumer(
    js: JetStreamContext,
    stream: str,
    durable: str,
    subject: str,
    *,
    ack_wait: float = 30.0,
    max_deliver: int = 10,
) -> None:
    """Create a durable pull consumer with explicit acks, unless it exists."""
    try:
        await js.consumer_info(stream, durable)
        return
    except NotFoundError:
        pass
    await js.add_consumer(
        stream,
        ConsumerConfig(
            durable_name=durable,
            filter_subject=subject,
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL,
            ack_wait=ack_wait,
            max_deliver=max_deliver,
            max_ack_pending=10_000,
        ),
    )
