"""The door's count of each room's exchange, and the workspace's referee (docs/adr/0083).

Revision ID: 1541
Revises: 1540
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "1541"
down_revision = "1540"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "door_exchanges",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("space_id", sa.Text(), nullable=False),
        sa.Column("body", JSONB(), nullable=False),
        sa.PrimaryKeyConstraint("workspace_id", "space_id"),
    )


def downgrade() -> None:
    op.drop_table("door_exchanges")
