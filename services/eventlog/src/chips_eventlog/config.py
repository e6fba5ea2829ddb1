"""Eventlog settings."""

from __future__ import annotations

from pydantic import Field

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
    # How many times a request is handed out before it is given up (answered with
    # `internal` and set aside on the dead-letter stream).
    append_max_deliver: int = 20
    # A request still failing this long after it was sent is given up too; 0 means 40 %
    # of append_timeout_seconds, so its writer hears why before the gateway stops waiting.
    append_request_cap_seconds: float = 0.0
    # The most one batch may take before it is abandoned (rolled back) and counted as a
    # failure of each of its requests: a hung batch does not hold its partition for good.
    append_delivery_cap_seconds: float = 30.0
    # How long a fork's copy or a new agent may come after the person's ask and still join
    # the room (docs/product/websocket.md, Forks; New agents: a minute). Tests set a shorter one.
    agent_ask_wait_seconds: float = Field(default=60.0, gt=0)
    # How long the answer to a change of who a workspace's tokens are waits at most for
    # every gateway's word that it forgot them (docs/adr/0172).
    principals_confirm_seconds: float = Field(default=2.0, ge=0)

    def request_cap(self) -> float:
        return self.append_request_cap_seconds or self.append_timeout_seconds * 0.4
