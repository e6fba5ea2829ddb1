"""The referee's accountant: after each usage in a room, weigh the job against its ceiling
(docs/product/websocket.md, "At the ceiling"; docs/adr/0083).

At 80% it warns everyone in the room, once per job; at the ceiling it pauses the room
(``exchange.set`` paused, why spend) and says so (``budget.warning`` threshold 100). Each is
appended under a key made of the room, the job's first seq and the threshold, so a
redelivery or a restart logs it once.
"""

from __future__ import annotations

from typing import Any

from chips_common.db.spend_reads import JobRead
from chips_common.rules.spend import PAUSE_AT, standing


def spend_key(space_id: str, since_seq: int, threshold: int) -> str:
    """The key a job's threshold is told under: once per room, job and threshold."""
    return f"spend:{space_id}:{since_seq}:{threshold}"


def crossing_events(space_id: str, read: JobRead) -> tuple[str, list[dict[str, Any]]] | None:
    """What the job as read calls for (its key and events), or None below 80%."""
    crossing = standing(read.job, read.ceiling_usd)
    if crossing is None:
        return None
    key = spend_key(space_id, crossing.since_seq, crossing.threshold)
    warning = {
        "type": "budget.warning",
        "space_id": space_id,
        "budget": {"limit_usd": crossing.ceiling_usd, "spent_usd": crossing.spent_usd},
        "threshold": crossing.threshold,
        "action": crossing.action,
        "scope": "job",
        "since_seq": crossing.since_seq,
    }
    if crossing.threshold != PAUSE_AT:
        return key, [warning]
    pause = {
        "type": "exchange.set",
        "space_id": space_id,
        "state": "paused",
        "why": "spend",
        "spend": read.facts(),
    }
    return key, [pause, warning]
