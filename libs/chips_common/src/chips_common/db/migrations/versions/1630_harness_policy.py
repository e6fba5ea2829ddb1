"""A harness's rules for the autonomy dial (docs/adr/0130), kept with the participant in
the door state; a question's default and whether it takes several options (docs/adr/0131).

Revision ID: 1630
Revises: 1600
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "1630"
down_revision = "1600"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "participants",
        sa.Column("rules", postgresql.JSONB(), nullable=False, server_default=sa.text("'[]'")),
    )
    op.add_column("run_cards", sa.Column("default_value", sa.Text(), nullable=True))
    op.add_column(
        "run_cards",
        sa.Column("multiple", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    op.drop_column("run_cards", "multiple")
    op.drop_column("run_cards", "default_value")
    op.drop_column("participants", "rules")
