"""Who heard a message while working: rm_messages.heard_by (message.heard, ADR 0075).

Revision ID: 1521
Revises: 1520
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "1521"
down_revision = "1520"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("rm_messages", sa.Column("heard_by", JSONB(), nullable=True))


def downgrade() -> None:
    op.drop_column("rm_messages", "heard_by")
