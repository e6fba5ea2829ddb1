"""The tables of runs, kept apart from ``tables`` (they share its metadata).

Door state (written by the eventlog in the append transaction): ``runs``, ``run_cards``
and ``lanes``. Their read models are the projector's (``projector_tables``).
docs/architecture/runs.md says what each holds.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Index,
    PrimaryKeyConstraint,
    Table,
    Text,
    false,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from chips_common.db.tables import metadata

# --- eventlog: door state ----------------------------------------------------------------

# Each run's state: running | paused | completed | failed | cancelled.
runs = Table(
    "runs",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("id", Text, nullable=False),
    Column("space_id", Text, nullable=False),
    Column("harness_id", Text, nullable=False),
    Column("state", Text, nullable=False),
    Column("started_seq", BigInteger, nullable=False),
    # The agent whose turn the run is, when an agent started it (docs/adr/0070).
    Column("agent_id", Text),
    PrimaryKeyConstraint("workspace_id", "id"),
    Index(
        "runs_live",
        "workspace_id",
        "space_id",
        postgresql_where=text("state IN ('running', 'paused')"),
    ),
)

# Approvals and questions (kind), and who answered each first.
run_cards = Table(
    "run_cards",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("kind", Text, nullable=False),  # approval | question
    Column("id", Text, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("space_id", Text, nullable=False),
    Column("harness_id", Text, nullable=False),
    Column("answerers", JSONB, nullable=False, server_default=text("'[]'::jsonb")),
    Column("expires_at", DateTime(timezone=True)),
    # A question's options as [[value, label], ...], and whether it takes typed words.
    Column("options", JSONB, nullable=False, server_default=text("'[]'::jsonb")),
    Column("free_text", Boolean, nullable=False, server_default=false()),
    Column("answered_by", Text),
    Column("answer", Text),
    Column("answered_seq", BigInteger),
    # A question's default, taken when it expires, and whether it takes several options
    # (ADR 0131).
    Column("default_value", Text),
    Column("multiple", Boolean, nullable=False, server_default=false()),
    PrimaryKeyConstraint("workspace_id", "kind", "id"),
)

# Each lane's state: open | completed | failed | cancelled (ADR 0017). ``run_id`` is the
# run that opened it, ``working_run_id`` the run in the room it went to that works it.
lanes = Table(
    "lanes",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("id", Text, nullable=False),
    Column("run_id", Text),
    Column("from_space_id", Text, nullable=False),
    Column("to_space_id", Text, nullable=False),
    Column("opener_id", Text, nullable=False),
    Column("working_run_id", Text),
    Column("state", Text, nullable=False),
    Column("opened_seq", BigInteger, nullable=False),
    PrimaryKeyConstraint("workspace_id", "id"),
)
