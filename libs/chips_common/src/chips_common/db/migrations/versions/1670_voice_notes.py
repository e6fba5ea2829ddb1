"""Voice notes (docs/adr/0137): which posted voice notes are still to be heard, and a
search row's transcript, so a hit can say it quotes what a machine heard.

Revision ID: 1670
Revises: 1660
"""

import sqlalchemy as sa
from alembic import op

revision = "1670"
down_revision = "1660"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "attachments", sa.Column("heard_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.add_column(
        "attachments",
        sa.Column("hearing_until", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index(
        "ix_attachments_unheard",
        "attachments",
        ["created_at"],
        postgresql_where=sa.text("kind = 'voice_note' AND heard_at IS NULL"),
    )
    op.add_column("search_docs", sa.Column("heard", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("search_docs", "heard")
    op.drop_index("ix_attachments_unheard", table_name="attachments")
    op.drop_column("attachments", "hearing_until")
    op.drop_column("attachments", "heard_at")
