"""Every workspace is brought over again, for its harnesses before agents (docs/adr/0154).

1700 and 1720 brought over the rooms of harnesses that had declared ``agents``; a harness
that had not was given none then. Now every harness with no agents of its own is given
one in each room it is in, declared ``agents`` or not. This migration changes no read
model: it lists every workspace in ``agents_to_give`` once more (one still waiting stays
listed once), and the referee sends each the door's ``agents.give`` under a key of this
migration and that workspace. A workspace owed nothing logs nothing.

Revision ID: 1740
Revises: 1720
"""

from alembic import op

revision = "1740"
down_revision = "1720"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "INSERT INTO agents_to_give (workspace_id) SELECT id FROM workspaces"
        " ON CONFLICT (workspace_id) DO NOTHING"
    )


def downgrade() -> None:
    pass  # what was given is in the log; a row left waiting gives nothing more than owed
