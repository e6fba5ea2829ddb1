"""A harness's autonomy (the dial, or "off"), kept with the participant in the door state.

Revision ID: 0900
Revises: 0500
"""

import sqlalchemy as sa
from alembic import op

revision = "0900"
down_revision = "0500"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("participants", sa.Column("autonomy", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("participants", "autonomy")
