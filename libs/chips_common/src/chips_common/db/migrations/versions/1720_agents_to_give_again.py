"""Every workspace is brought over again, each under a key of its own (docs/adr/0146).

1700's referee sent every workspace ``agents.give`` under one key; an idempotency key is
its credential's across workspaces, so every workspace after the first was answered with
the first's answer and given nothing. This migration changes no read model: it lists
every workspace in ``agents_to_give`` once more (one still waiting from 1700 stays listed
once), and the referee sends each the door's ``agents.give`` under a key of this
migration and that workspace. A workspace given its agents already is owed none: the
door logs nothing for it.

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
