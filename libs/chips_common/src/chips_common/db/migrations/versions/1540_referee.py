"""The referee's checkpoint per workspace (docs/adr/0083).

Revision ID: 1540
Revises: 1500
"""

import sqlalchemy as sa
from alembic import op

revision = "1540"
down_revision = "1500"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "referee_checkpoints",
        sa.Column("workspace_id", sa.Text(), primary_key=True),
        sa.Column("seq", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("referee_checkpoints")
