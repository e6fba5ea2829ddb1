"""The referee's own tables (docs/adr/0083), kept apart from ``tables`` (sharing its metadata).

``referee_checkpoints``: how far the referee has read each workspace's log. What it decides
it writes through the eventlog under deterministic idempotency keys, so its checkpoint is
all it needs to keep: its clocks and counters are rebuilt from the log.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Table, Text

from chips_common.db.tables import metadata

referee_checkpoints = Table(
    "referee_checkpoints",
    metadata,
    Column("workspace_id", Text, primary_key=True),
    Column("seq", BigInteger, nullable=False),
)
