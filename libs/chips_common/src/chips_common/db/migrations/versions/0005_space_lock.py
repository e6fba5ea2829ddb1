"""Whether a room's changes are locked (space.lock_set).

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("spaces", "rm_spaces"):
        op.add_column(
            table, sa.Column("locked", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    for table in ("rm_spaces", "spaces"):
        op.drop_column(table, "locked")
