"""Remember where each sender's last message in a space went (addressing rule 5).

Revision ID: 0100
Revises: 0002

Branches from 0002 beside the spaces work (0003, 0004); `migrate` upgrades to "heads".
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0100"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "address_choices",
        sa.Column("space_id", sa.Text(), nullable=False),
        sa.Column("participant_id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("ids", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.PrimaryKeyConstraint("space_id", "participant_id"),
    )


def downgrade() -> None:
    op.drop_table("address_choices")
