"""Eventlog settings."""

from __future__ import annotations

from chips_common.config import Settings


class EventlogSettings(Settings):
    port: int = 8091
    batch_size: int = 256
    outbox_sweep_seconds: float = 2.0
    # How long a request pulled by a replica that died waits before another takes it.
    append_ack_wait_seconds: float = 30.0
    # How often a replica looks at its partition leases (takes free ones, hands back extras).
    lease_check_seconds: float = 2.0
    # How long a partition's lease lives without renewal; renewed every third of it. A
    # replica that stops renewing (killed, paused, hung) loses its partitions after it.
    lease_ttl_seconds: float = 5.0
