"""The read model of lanes: each lane as its route card shows it.

Revision ID: 0303
Revises: 0302
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0303"
down_revision = "0302"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rm_lanes",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("run_id", sa.Text()),
        sa.Column("from_space_id", sa.Text(), nullable=False),
        sa.Column("to_space_id", sa.Text(), nullable=False),
        sa.Column("opener_id", sa.Text(), nullable=False),
        sa.Column("task", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("worker", sa.Text()),
        sa.Column("working_run_id", sa.Text()),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text()),
        sa.Column("why", sa.Text()),
        sa.Column("cost_usd", sa.Float()),
        sa.Column("ended_by", sa.Text()),
        sa.Column("opened_seq", sa.BigInteger(), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_seq", sa.BigInteger()),
        sa.Column("ended_at", sa.DateTime(timezone=True)),
        sa.PrimaryKeyConstraint("workspace_id", "id"),
    )
    op.create_index("rm_lanes_run", "rm_lanes", ["workspace_id", "run_id"])
    op.create_index("rm_lanes_from", "rm_lanes", ["workspace_id", "from_space_id", "opened_seq"])
    op.create_index("rm_lanes_to", "rm_lanes", ["workspace_id", "to_space_id", "opened_seq"])


def downgrade() -> None:
    op.drop_table("rm_lanes")
