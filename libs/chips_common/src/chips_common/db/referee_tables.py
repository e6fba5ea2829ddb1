"""The referee's own tables (docs/adr/0083), kept apart from ``tables`` (sharing its metadata).

``referee_checkpoints``: how far the referee has read each workspace's log. What it decides
it writes through the eventlog under deterministic idempotency keys, so its checkpoint is
all it needs to keep for the money: a job is read from the log as it stands.

``referee_rooms``: what it folded of each room (``rules/lead.py``'s ``Room``: the lead, the
turns going, the last words) and when the next thing is due there (a hand-off, or a turn
falling silent), written in the transaction that moves its checkpoint. Its clocks are
these ``due_at`` moments: a referee that was down finds what fell due meanwhile and does
it once (docs/adr/0090).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Index,
    PrimaryKeyConstraint,
    Table,
    Text,
    text,
)
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


referee_rooms = Table(
    "referee_rooms",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("space_id", Text, nullable=False),
    Column("body", JSONB, nullable=False),
    Column("due_at", DateTime(timezone=True)),
    PrimaryKeyConstraint("workspace_id", "space_id"),
    Index("referee_rooms_due", "due_at", postgresql_where=text("due_at IS NOT NULL")),
)

# The workspaces whose harnesses may be owed the agent Chips gives one with none of its own
# (docs/adr/0146, 0154): filled by migrations 1700, 1720 and 1740 with every workspace
# then; the referee sends each the door's ``agents.give`` and takes its row out once the
# log answered.
agents_to_give = Table(
    "agents_to_give",
    metadata,
    Column("workspace_id", Text, primary_key=True),
)
