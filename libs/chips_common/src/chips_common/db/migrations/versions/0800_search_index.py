"""The search index: Postgres full-text search over messages and receipt steps.

Revision ID: 0800
Revises: 0500

``unaccent`` and ``btree_gin`` are trusted extensions (Postgres 13 and later), so the
database's owner may create them. ``chips_search`` is ``simple`` with accents folded
(docs/adr/0028); the GIN index leads with ``workspace_id`` (btree_gin) so a search reads
the postings of one workspace only, and takes no pending list (``fastupdate = off``) so a
search never scans one (docs/adr/0029).
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0800"
down_revision = "0500"
branch_labels = None
depends_on = None

WORD_TOKENS = "word, hword, hword_part, numword, numhword, hword_numpart"


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS unaccent")
    op.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    op.execute("CREATE TEXT SEARCH CONFIGURATION chips_search (COPY = simple)")
    op.execute(
        f"ALTER TEXT SEARCH CONFIGURATION chips_search ALTER MAPPING FOR {WORD_TOKENS} "
        "WITH unaccent, simple"
    )
    op.create_table(
        "search_docs",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("doc_id", sa.Text(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("space_id", sa.Text(), nullable=False),
        sa.Column("room_id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("message_kind", sa.Text()),
        sa.Column("message_id", sa.Text()),
        sa.Column("run_id", sa.Text()),
        sa.Column("step_id", sa.Text()),
        sa.Column("author_id", sa.Text(), nullable=False),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
        sa.Column("words", sa.Text(), nullable=False),
        sa.Column("extra", sa.Text(), nullable=False),
        sa.Column("tsv", postgresql.TSVECTOR(), nullable=False),
        sa.PrimaryKeyConstraint("workspace_id", "doc_id"),
    )
    op.create_index("search_docs_seq", "search_docs", ["workspace_id", "seq"], unique=True)
    op.create_index("search_docs_room", "search_docs", ["workspace_id", "room_id"])
    op.execute(
        "CREATE INDEX search_docs_tsv ON search_docs USING gin (workspace_id, tsv) "
        "WITH (fastupdate = off)"
    )
    # A room is in one workspace: told so, the planner does not take "this workspace" and
    # "one of these rooms" for independent, and so does not underestimate a member's hits.
    op.execute(
        "CREATE STATISTICS search_docs_room_workspace (dependencies)"
        " ON workspace_id, room_id FROM search_docs"
    )
    op.create_table(
        "search_threads",
        sa.Column("space_id", sa.Text(), primary_key=True),
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("room_id", sa.Text(), nullable=False),
    )
    op.create_index("search_threads_room", "search_threads", ["room_id"])
    op.create_table(
        "search_checkpoints",
        sa.Column("workspace_id", sa.Text(), primary_key=True),
        sa.Column("seq", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("search_checkpoints")
    op.drop_table("search_threads")
    op.drop_table("search_docs")
    op.execute("DROP TEXT SEARCH CONFIGURATION IF EXISTS chips_search")
