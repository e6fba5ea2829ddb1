"""The read models of runs: runs, steps, cards (approvals, questions) and usage.

Revision ID: 0301
Revises: 0300
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0301"
down_revision = "0300"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rm_runs",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("space_id", sa.Text(), nullable=False),
        sa.Column("harness_id", sa.Text(), nullable=False),
        sa.Column("goal", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text()),
        sa.Column("message_id", sa.Text()),
        sa.Column("chips", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("phase", sa.Text()),
        sa.Column("verb", sa.Text()),
        sa.Column("progress", sa.Float()),
        sa.Column("status_text", sa.Text()),
        sa.Column("summary", sa.Text()),
        sa.Column("why", sa.Text()),
        sa.Column("started_seq", sa.BigInteger(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_seq", sa.BigInteger()),
        sa.Column("ended_at", sa.DateTime(timezone=True)),
        sa.Column("tokens_in", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("tokens_out", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("cost_usd", sa.Float(), nullable=False, server_default="0"),
        sa.Column("uncosted", sa.BigInteger(), nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("workspace_id", "id"),
    )
    op.create_index("rm_runs_space", "rm_runs", ["workspace_id", "space_id", "started_seq"])
    op.create_table(
        "rm_steps",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("step_id", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("title", sa.Text()),
        sa.Column("summary", sa.Text()),
        sa.Column("started_seq", sa.BigInteger(), nullable=False),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("workspace_id", "run_id", "step_id"),
    )
    op.create_table(
        "rm_cards",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("space_id", sa.Text(), nullable=False),
        sa.Column("harness_id", sa.Text(), nullable=False),
        sa.Column("body", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True)),
        sa.Column("asked_seq", sa.BigInteger(), nullable=False),
        sa.Column("answered_by", sa.Text()),
        sa.Column("answer", postgresql.JSONB(astext_type=sa.Text())),
        sa.Column("answered_seq", sa.BigInteger()),
        sa.PrimaryKeyConstraint("workspace_id", "kind", "id"),
    )
    op.create_index(
        "rm_cards_waiting",
        "rm_cards",
        ["workspace_id", "space_id"],
        postgresql_where=sa.text("answered_seq IS NULL"),
    )
    op.create_table(
        "rm_usage",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("scope_id", sa.Text(), nullable=False),
        sa.Column("tokens_in", sa.BigInteger(), nullable=False),
        sa.Column("tokens_out", sa.BigInteger(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("reports", sa.BigInteger(), nullable=False),
        sa.Column("uncosted", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("workspace_id", "scope", "scope_id"),
    )


def downgrade() -> None:
    op.drop_table("rm_usage")
    op.drop_index("rm_cards_waiting", table_name="rm_cards")
    op.drop_table("rm_cards")
    op.drop_table("rm_steps")
    op.drop_index("rm_runs_space", table_name="rm_runs")
    op.drop_table("rm_runs")
