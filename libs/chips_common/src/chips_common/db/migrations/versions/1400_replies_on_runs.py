"""A message said on a run: ``rm_messages.run_id``, read by ``GET /v1/runs/:id``.

Revision ID: 1400
Revises: 1100
"""

import sqlalchemy as sa
from alembic import op

revision = "1400"
down_revision = "1100"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("rm_messages", sa.Column("run_id", sa.Text()))
    op.create_index("rm_messages_run", "rm_messages", ["workspace_id", "run_id", "seq"])


def downgrade() -> None:
    op.drop_index("rm_messages_run", table_name="rm_messages")
    op.drop_column("rm_messages", "run_id")
