"""Every workspace is brought over again, for harnesses before agents (docs/adr/0154).

A harness that never declared ``agents`` is now given one agent per room too, as one that
did was by 1700 (docs/adr/0146). Bringing its old rooms over is again a matter of the log,
so this migration changes no read model: it lists every workspace in ``agents_to_give``
once more (one still waiting from 1700 stays listed once), and the referee sends each the
door's ``agents.give`` under a key of this migration and that workspace.

Revision ID: 1720
Revises: 1700
"""

from alembic import op

revision = "1720"
down_revision = "1700"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "INSERT INTO agents_to_give (workspace_id) SELECT id FROM workspaces"
        " ON CONFLICT (workspace_id) DO NOTHING"
    )


def downgrade() -> None:
    pass  # what was given is in the log; a row left waiting gives nothing more than owed
