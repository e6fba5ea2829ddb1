"""The projector's tables: the read models and its checkpoint (owned by ``projector``).

Written only by the projector, folding the log in seq order, and rebuilt from seq 0 by
``chips projector rebuild`` (docs/architecture/design.md §5; docs/architecture/projector.md).
The gateway answers HTTP reads from them (the reads ``chips_common.db.ownership`` lists).
They share ``tables.metadata``; the migrations stay one history.
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
    true,
)
from sqlalchemy.dialects.postgresql import JSONB

from chips_common.db.tables import metadata

# --- rooms, members, messages, participants -----------------------------------------------

projector_checkpoints = Table(
    "projector_checkpoints",
    metadata,
    Column("workspace_id", Text, primary_key=True),
    Column("seq", BigInteger, nullable=False),
)

rm_spaces = Table(
    "rm_spaces",
    metadata,
    Column("id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False, index=True),
    Column("kind", Text, nullable=False),
    Column("title", Text),
    Column("created_by", Text, nullable=False),
    Column("created_seq", BigInteger, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("last_seq", BigInteger, nullable=False),
    Column("message_count", BigInteger, nullable=False),
    Column("state", Text, nullable=False, server_default="open"),
    Column("home_of", Text),
    # Who last archived or unarchived it, and when (GET /v1/harnesses/:id/spaces).
    Column("moved_by", Text),
    Column("moved_seq", BigInteger),
    Column("key", Text),
    Column("key_shared", Boolean, nullable=False, server_default=false()),
    Column("locked", Boolean, nullable=False, server_default=false()),
    Column("asked_of", Text),
    Column("parent_space_id", Text),
    Column("root_message_id", Text),
    # The room's lead (space.lead_set; docs/adr/0090).
    Column("lead_id", Text),
)

# Which harness opened (or claimed) which space by key: GET /v1/harnesses/:id/spaces.
rm_openers = Table(
    "rm_openers",
    metadata,
    Column("space_id", Text, nullable=False),
    Column("harness_id", Text, nullable=False),
    Column("workspace_id", Text, nullable=False),
    Column("since_seq", BigInteger, nullable=False),
    PrimaryKeyConstraint("space_id", "harness_id"),
    Index("rm_openers_harness", "workspace_id", "harness_id"),
)

rm_members = Table(
    "rm_members",
    metadata,
    Column("space_id", Text, nullable=False),
    Column("participant_id", Text, nullable=False),
    Column("workspace_id", Text, nullable=False),
    Column("standing", Text, nullable=False),
    Column("since_seq", BigInteger, nullable=False),
    PrimaryKeyConstraint("space_id", "participant_id"),
    Index("rm_members_participant", "workspace_id", "participant_id"),
)

rm_messages = Table(
    "rm_messages",
    metadata,
    Column("id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("space_id", Text, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("author_id", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("reply_to", Text),
    Column("ts", DateTime(timezone=True), nullable=False),
    # A card's fields, for every kind but text and system.
    Column("card", JSONB),
    Column("edited", Boolean, nullable=False, server_default=false()),
    Column("deleted", Boolean, nullable=False, server_default=false()),
    Column("pinned", Boolean, nullable=False, server_default=false()),
    # The run a harness's reply was said on (message.post's run_id), for the run's reads.
    Column("run_id", Text),
    # The agents whose turns heard the message while working (message.heard), in order.
    Column("heard_by", JSONB),
    Index("rm_messages_space_seq", "space_id", "seq"),
    Index("rm_messages_run", "workspace_id", "run_id", "seq"),
)

# The lines each person hid from their own room (message.hidden, until message.shown).
rm_hidden = Table(
    "rm_hidden",
    metadata,
    Column("participant_id", Text, nullable=False),
    Column("message_id", Text, nullable=False),
    Column("workspace_id", Text, nullable=False),
    PrimaryKeyConstraint("participant_id", "message_id"),
)

# Feedback standing under each line: reactions not taken back, and every correction.
rm_feedback = Table(
    "rm_feedback",
    metadata,
    Column("id", Text, primary_key=True),  # the feedback event's id
    Column("workspace_id", Text, nullable=False),
    Column("space_id", Text, nullable=False),
    Column("message_id", Text, nullable=False, index=True),
    Column("from_id", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("emoji", Text),
    Column("note", Text),
    Column("reasons", JSONB),
    Column("seq", BigInteger, nullable=False),
)

# The directory: who is in the workspace, for names on screens and in room lines.
rm_participants = Table(
    "rm_participants",
    metadata,
    Column("id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False, index=True),
    Column("kind", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("role", Text, nullable=False),
    Column("owner_id", Text),
    Column("joined_seq", BigInteger, nullable=False),
    Column("capabilities", JSONB, nullable=False, server_default=text("'[]'::jsonb")),
    # An agent's facts, as the door keeps them (docs/adr/0070).
    Column("agent", JSONB),
    # A person an owner or admin deactivated (person.updated, docs/adr/0125).
    Column("active", Boolean, nullable=False, server_default=true()),
    # A person's own IANA time zone (person.updated), for "time now" and quiet hours.
    Column("time_zone", Text),
)


# --- runs, steps, cards, usage, lanes (docs/architecture/runs.md) --------------------------

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


# Every read model, dropped and folded again by a rebuild.
READ_MODELS = (
    rm_spaces,
    rm_members,
    rm_messages,
    rm_participants,
    rm_openers,
    rm_hidden,
    rm_feedback,
    rm_runs,
    rm_steps,
    rm_cards,
    rm_usage,
    rm_lanes,
)
