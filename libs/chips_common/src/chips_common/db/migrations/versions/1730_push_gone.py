"""Push subscriptions their push service said are no more (docs/adr/0132): the notifier
marks them, and pushes to them no longer unless the browser subscribes again.

Revision ID: 1730
Revises: 1670
"""

import sqlalchemy as sa
from alembic import op

revision = "1730"
down_revision = "1670"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "push_gone",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("participant_id", sa.Text(), nullable=False),
        sa.Column("endpoint", sa.Text(), nullable=False),
        sa.Column("gone_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("workspace_id", "participant_id", "endpoint"),
    )


def downgrade() -> None:
    op.drop_table("push_gone")
