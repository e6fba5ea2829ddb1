"""The harness a room was asked of (space.created asked_of), until it claims it.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("spaces", "rm_spaces"):
        op.add_column(table, sa.Column("asked_of", sa.Text(), nullable=True))


def downgrade() -> None:
    for table in ("rm_spaces", "spaces"):
        op.drop_column(table, "asked_of")
