"""The search index, partitioned by workspace (hash), so a search reads its own postings.

Revision ID: 1300
Revises: 0800, 0900, 1100

A GIN index over ``(workspace_id, tsv)`` keeps one posting list per column: the word's
postings are every workspace's, and a prefix (``pel:*``) gathers the postings of every
word it starts, across all of them, before the workspace narrows them. At a million
messages a two-word search with a prefix read 170 ms of postings for 300 rows. Hash
partitions on ``workspace_id`` make each partition's GIN hold a few workspaces' words, and
a search (always of one workspace) reads one partition (docs/adr/0051).

The index is derived from the log: the table is made again empty and the checkpoints are
cleared, so the search service's sweep folds every workspace again from seq 0 (or
``python -m chips_search rebuild`` does it in one go, faster).
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "1300"
down_revision = ("0800", "0900", "1100")
branch_labels = None
depends_on = None

PARTITIONS = 32


def _columns() -> list[sa.Column]:
    return [
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
    ]


def _indexes(partitions: int) -> None:
    op.create_index("search_docs_seq", "search_docs", ["workspace_id", "seq"], unique=True)
    op.create_index("search_docs_room", "search_docs", ["workspace_id", "room_id"])
    op.execute(
        "CREATE INDEX search_docs_tsv ON search_docs USING gin (workspace_id, tsv) "
        "WITH (fastupdate = off)"
    )
    # A room is in one workspace (0800): the planner plans each partition with its own
    # statistics, so each has the statement.
    tables = [f"search_docs_p{i:02d}" for i in range(partitions)] or ["search_docs"]
    for table in tables:
        op.execute(
            f"CREATE STATISTICS {table}_room_workspace (dependencies)"
            f" ON workspace_id, room_id FROM {table}"
        )


def upgrade() -> None:
    op.drop_table("search_docs")
    op.create_table("search_docs", *_columns(), postgresql_partition_by="HASH (workspace_id)")
    for i in range(PARTITIONS):
        op.execute(
            f"CREATE TABLE search_docs_p{i:02d} PARTITION OF search_docs"
            f" FOR VALUES WITH (MODULUS {PARTITIONS}, REMAINDER {i})"
        )
    _indexes(PARTITIONS)
    # Folded again from the log: the sweep finds every workspace behind.
    op.execute("TRUNCATE search_threads, search_checkpoints")


def downgrade() -> None:
    op.drop_table("search_docs")
    op.create_table("search_docs", *_columns())
    _indexes(0)
    op.execute("TRUNCATE search_threads, search_checkpoints")
