"""A run's agent in the read models, for the run reads (docs/adr/0075, 0095).

Revision ID: 1560
Revises: 1521
"""

import sqlalchemy as sa
from alembic import op

revision = "1560"
down_revision = "1521"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("rm_runs", sa.Column("agent_id", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("rm_runs", "agent_id")
