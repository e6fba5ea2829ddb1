"""The door state of lanes: each lane's rooms, its opener, the run working it, its state.

Revision ID: 0302
Revises: 0301
"""

import sqlalchemy as sa
from alembic import op

revision = "0302"
down_revision = "0301"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lanes",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("run_id", sa.Text()),
        sa.Column("from_space_id", sa.Text(), nullable=False),
        sa.Column("to_space_id", sa.Text(), nullable=False),
        sa.Column("opener_id", sa.Text(), nullable=False),
        sa.Column("working_run_id", sa.Text()),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("opened_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("workspace_id", "id"),
    )


def downgrade() -> None:
    op.drop_table("lanes")
