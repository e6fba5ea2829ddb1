"""Gateway settings."""

from __future__ import annotations

from chips_common.config import Settings
from chips_common.ids import new_id


class GatewaySettings(Settings):
    port: int = 8080
    # Names this replica's reply subject; unique per process unless set.
    gateway_id: str = ""
    # How often a workspace feed asks Postgres for a head it has not heard of (a lost
    # or delayed JetStream message at the tail of the stream, DESIGN.md §2).
    feed_tail_check_seconds: float = 1.0
    read_your_writes_timeout_seconds: float = 5.0
    # How long GET /v1/search waits for the index to fold in the seq it answers as of
    # (after_seq, or the head when the search arrived) before answering as of less.
    search_wait_seconds: float = 5.0

    def replica_id(self) -> str:
        if not self.gateway_id:
            self.gateway_id = new_id("gw").lower()
        return self.gateway_id
