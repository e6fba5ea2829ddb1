"""The door state of runs: each run's state, and its approvals and questions.

Revision ID: 0300
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0300"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("space_id", sa.Text(), nullable=False),
        sa.Column("harness_id", sa.Text(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("started_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("workspace_id", "id"),
    )
    op.create_index(
        "runs_live",
        "runs",
        ["workspace_id", "space_id"],
        postgresql_where=sa.text("state IN ('running', 'paused')"),
    )
    op.create_table(
        "run_cards",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("space_id", sa.Text(), nullable=False),
        sa.Column("harness_id", sa.Text(), nullable=False),
        sa.Column(
            "answerers",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            server_default=sa.text("'[]'::jsonb"),
        ),
        sa.Column("expires_at", sa.DateTime(timezone=True)),
        sa.Column(
            "options",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            server_default=sa.text("'[]'::jsonb"),
        ),
        sa.Column("free_text", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("answered_by", sa.Text()),
        sa.Column("answer", sa.Text()),
        sa.Column("answered_seq", sa.BigInteger()),
        sa.PrimaryKeyConstraint("workspace_id", "kind", "id"),
    )


def downgrade() -> None:
    op.drop_table("run_cards")
    op.drop_index("runs_live", table_name="runs")
    op.drop_table("runs")
