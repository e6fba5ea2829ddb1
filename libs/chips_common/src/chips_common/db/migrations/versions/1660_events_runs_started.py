"""A harness's turns under way found without walking the workspace's log (docs/adr/0136).

Every harness's subscription now reads the runs it had going as of its start
(``LogReader.working_turns``), not only a harness with agents: that read looked at every
event of the workspace for its ``run.started``. A partial index holds only those, so a
subscription reads the workspace's runs, whatever the log's length.

Revision ID: 1660
Revises: 1650
"""

import sqlalchemy as sa
from alembic import op

revision = "1660"
down_revision = "1650"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "events_runs_started",
        "events",
        ["workspace_id", "seq"],
        postgresql_where=sa.text("type = 'run.started'"),
    )


def downgrade() -> None:
    op.drop_index("events_runs_started", table_name="events")
