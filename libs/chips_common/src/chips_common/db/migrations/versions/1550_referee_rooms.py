"""What the referee keeps of each room: its lead, its turns, its last words and when the
next thing is due there (docs/adr/0090); an index of the events that say a room's lead and
who works in it; and the lead on the spaces' read model.

Its checkpoints are cleared, so that the referee folds every room from the log's start
once; what it decided before is keyed, so deciding it again logs nothing twice.

Revision ID: 1550
Revises: 1560
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "1550"
down_revision = "1560"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "referee_rooms",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("space_id", sa.Text(), nullable=False),
        sa.Column("body", JSONB(), nullable=False),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("workspace_id", "space_id"),
    )
    op.create_index(
        "referee_rooms_due",
        "referee_rooms",
        ["due_at"],
        postgresql_where=sa.text("due_at IS NOT NULL"),
    )
    op.create_index(
        "events_room_referee",
        "events",
        ["workspace_id", "space_id", "seq"],
        postgresql_where=sa.text("type IN ('space.lead_set', 'room.working', 'room.idle')"),
    )
    op.add_column("rm_spaces", sa.Column("lead_id", sa.Text(), nullable=True))
    op.execute("DELETE FROM referee_checkpoints")


def downgrade() -> None:
    op.drop_column("rm_spaces", "lead_id")
    op.drop_index("events_room_referee", table_name="events")
    op.drop_index("referee_rooms_due", table_name="referee_rooms")
    op.drop_table("referee_rooms")
