"""A room's ceiling and its pauses found without walking its history (docs/adr/0083).

The spend read (``spend_reads.read_job``), made for every ``message.new`` a harness is
handed, looked for the room's last ``space.spend_ceiling_set`` by walking the room's events
newest first; in a room whose ceiling was never set that walk went to the room's first
event on every delivery. ``read_pause`` did the same for ``exchange.set``. A partial index
holds only those two types, so each lookup reads a handful of rows whatever the room's age.

Revision ID: 1570
Revises: 1550
"""

import sqlalchemy as sa
from alembic import op

revision = "1570"
down_revision = "1550"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "events_room_spend",
        "events",
        ["workspace_id", "space_id", "seq"],
        postgresql_where=sa.text("type IN ('space.spend_ceiling_set', 'exchange.set')"),
    )


def downgrade() -> None:
    op.drop_index("events_room_spend", table_name="events")
