"""The tables of runs, kept apart from ``tables`` (they share its metadata).

Door state (written by the eventlog in the append transaction): ``runs``, ``run_cards``
and ``lanes``. Read models (written by the projector): ``rm_runs``, ``rm_steps``,
``rm_cards``, ``rm_usage`` and ``rm_lanes``. docs/architecture/runs.md says what each holds.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
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

# --- projector: read models ----------------------------------------------------------------

rm_runs = Table(
    "rm_runs",
    metadata,
    Column("id", Text, nullable=False),
    Column("workspace_id", Text, nullable=False),
    Column("space_id", Text, nullable=False),
    Column("harness_id", Text, nullable=False),
    # The agent whose turn it is, when an agent's (docs/adr/0075); null for the harness.
    Column("agent_id", Text),
    Column("goal", Text, nullable=False),
    Column("session_id", Text),
    Column("message_id", Text),
    Column("chips", Boolean, nullable=False, server_default=false()),
    Column("state", Text, nullable=False),
    Column("phase", Text),
    Column("verb", Text),
    Column("progress", Float),
    Column("status_text", Text),
    Column("summary", Text),
    Column("why", Text),
    Column("started_seq", BigInteger, nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("ended_seq", BigInteger),
    Column("ended_at", DateTime(timezone=True)),
    Column("tokens_in", BigInteger, nullable=False, server_default="0"),
    Column("tokens_out", BigInteger, nullable=False, server_default="0"),
    Column("cost_usd", Float, nullable=False, server_default="0"),
    Column("uncosted", BigInteger, nullable=False, server_default="0"),
    PrimaryKeyConstraint("workspace_id", "id"),
    Index("rm_runs_space", "workspace_id", "space_id", "started_seq"),
)

rm_steps = Table(
    "rm_steps",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("step_id", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("title", Text),
    Column("summary", Text),
    Column("started_seq", BigInteger, nullable=False),
    Column("last_seq", BigInteger, nullable=False),
    PrimaryKeyConstraint("workspace_id", "run_id", "step_id"),
)

rm_cards = Table(
    "rm_cards",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("id", Text, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("space_id", Text, nullable=False),
    Column("harness_id", Text, nullable=False),
    Column("body", JSONB, nullable=False),  # the request or ask as logged
    Column("expires_at", DateTime(timezone=True)),
    Column("asked_seq", BigInteger, nullable=False),
    Column("answered_by", Text),
    Column("answer", JSONB),
    Column("answered_seq", BigInteger),
    PrimaryKeyConstraint("workspace_id", "kind", "id"),
    Index(
        "rm_cards_waiting",
        "workspace_id",
        "space_id",
        postgresql_where=text("answered_seq IS NULL"),
    ),
)

# Spend per scope: a run's is on rm_runs; per space ("space") and per harness ("harness").
rm_usage = Table(
    "rm_usage",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("scope", Text, nullable=False),
    Column("scope_id", Text, nullable=False),
    Column("tokens_in", BigInteger, nullable=False),
    Column("tokens_out", BigInteger, nullable=False),
    Column("cost_usd", Float, nullable=False),
    Column("reports", BigInteger, nullable=False),
    Column("uncosted", BigInteger, nullable=False),
    PrimaryKeyConstraint("workspace_id", "scope", "scope_id"),
)

# Lanes as their route cards show them, folded from each event's copy at home.
rm_lanes = Table(
    "rm_lanes",
    metadata,
    Column("workspace_id", Text, nullable=False),
    Column("id", Text, nullable=False),
    Column("run_id", Text),
    Column("from_space_id", Text, nullable=False),
    Column("to_space_id", Text, nullable=False),
    Column("opener_id", Text, nullable=False),
    Column("task", JSONB, nullable=False),
    Column("worker", Text),
    Column("working_run_id", Text),
    Column("state", Text, nullable=False),
    Column("summary", Text),
    Column("why", Text),
    Column("cost_usd", Float),
    Column("ended_by", Text),
    Column("opened_seq", BigInteger, nullable=False),
    Column("opened_at", DateTime(timezone=True), nullable=False),
    Column("ended_seq", BigInteger),
    Column("ended_at", DateTime(timezone=True)),
    PrimaryKeyConstraint("workspace_id", "id"),
    Index("rm_lanes_run", "workspace_id", "run_id"),
    Index("rm_lanes_from", "workspace_id", "from_space_id", "opened_seq"),
    Index("rm_lanes_to", "workspace_id", "to_space_id", "opened_seq"),
)

READ_MODELS = (rm_runs, rm_steps, rm_cards, rm_usage, rm_lanes)
