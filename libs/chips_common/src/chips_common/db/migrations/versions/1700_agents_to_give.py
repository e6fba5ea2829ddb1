"""The workspaces whose rooms are brought over to one agent per room (docs/adr/0146).

A harness that speaks agents and has none of its own is given one in each room it is in.
Rooms from before that rule hold the harness itself: bringing them over is a matter of
the log (agent.registered, its membership and agent.attached, membership.replaced), so
this migration changes no read model. It lists every workspace there is now; the referee
sends each the door's ``agents.give`` and takes the row out once the log answered, and
the read models follow the events as they follow any.

Revision ID: 1700
Revises: 1690
"""

import sqlalchemy as sa
from alembic import op

revision = "1700"
down_revision = "1690"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("agents_to_give", sa.Column("workspace_id", sa.Text(), primary_key=True))
    op.execute("INSERT INTO agents_to_give (workspace_id) SELECT id FROM workspaces")


def downgrade() -> None:
    op.drop_table("agents_to_give")
