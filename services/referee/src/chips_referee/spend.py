"""The referee's accountant: after each usage in a room, weigh the job against its ceiling
(spec/websocket.md, "At the ceiling"; docs/adr/0083).

At 80% it warns everyone in the room, once per job; at the ceiling it pauses the room
(``exchange.set`` paused, why spend) and says so (``budget.warning`` threshold 100). Each is
appended under a key made of the room, the job's first seq and the threshold, so a
redelivery or a restart logs it once.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from chips_common.db.spend_reads import JobRead
from chips_common.rules.spend import PAUSE_AT, WARN_AT


def crossing_events(space_id: str, read: JobRead) -> tuple[str, list[dict[str, Any]]] | None:
    """What the job as read calls for (its key and events), or None below 80%."""
    job, ceiling = read.job, read.ceiling_usd
    limit = Decimal(str(ceiling))
    budget = {"limit_usd": ceiling, "spent_usd": job.spent_usd}
    if job.spent >= limit:
        key = f"spend:{space_id}:{job.since_seq}:{PAUSE_AT}"
        return key, [
            {
                "type": "exchange.set",
                "space_id": space_id,
                "state": "paused",
                "why": "spend",
                "spend": read.facts(),
            },
            {
                "type": "budget.warning",
                "space_id": space_id,
                "budget": budget,
                "threshold": PAUSE_AT,
                "action": "pause",
                "scope": "job",
                "since_seq": job.since_seq,
            },
        ]
    if job.spent * 100 >= limit * WARN_AT:
        key = f"spend:{space_id}:{job.since_seq}:{WARN_AT}"
        return key, [
            {
                "type": "budget.warning",
                "space_id": space_id,
                "budget": budget,
                "threshold": WARN_AT,
                "action": "warn",
                "scope": "job",
                "since_seq": job.since_seq,
            }
        ]
    return None
