"""The referee's own tables (docs/adr/0083), kept apart from ``tables`` (sharing its metadata).

``referee_checkpoints``: how far the referee has read each workspace's log. What it decides
it writes through the eventlog under deterministic idempotency keys, so its checkpoint is
all it needs to keep: its clocks and counters are rebuilt from the log.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, PrimaryKeyConstraint, Table, Text
from sqlalchemy.dialects.postgresql import JSONB

from chips_common.db.tables import metadata

referee_checkpoints = Table(
    "referee_checkpoints",
    metadata,
    Column("workspace_id", Text, primary_key=True),
    Column("seq", BigInteger, nullable=False),
)

# The door's count of each room's exchange (rules/exchanges.py), one row per room, and the
# workspace's referee settings in the row whose space_id is empty. Door state: written by
# the eventlog in the transaction that logs what changed it (docs/adr/0083).
door_exchanges = Table(
    "door_exchanges",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("space_id", Text, nullable=False),
    Column("body", JSONB, nullable=False),
    PrimaryKeyConstraint("workspace_id", "space_id"),
)
