"""The search index's tables, written by the search service alone (docs/adr/0027).

``search_docs`` holds one row per thing a search finds: a message (its words and its
card's) or a step of a run (its title and summary, a receipt's lines). ``tsv`` is
``to_tsvector('chips_search', words || extra)``; ``room_id`` is the room whose members see
the row (a thread's room, for a row in a thread), a fact of the log that never changes.
Who may see a room is not here: the gateway checks membership when it searches.
docs/architecture/search.md says what each column is for.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, DateTime, Index, PrimaryKeyConstraint, Table, Text
from sqlalchemy.dialects.postgresql import TSVECTOR

from chips_common.db.tables import metadata

# The text search configuration of the index and of every query (docs/adr/0028).
TEXT_SEARCH_CONFIG = "chips_search"

search_docs = Table(
    "search_docs",
    metadata,
    Column("workspace_id", Text, nullable=False),
    # The message's id, or ``step:<run_id>:<step_id>``.
    Column("doc_id", Text, nullable=False),
    # Where it stands in the log: the post's seq, or the step's first; newest first by it.
    Column("seq", BigInteger, nullable=False),
    Column("space_id", Text, nullable=False),
    Column("room_id", Text, nullable=False),
    Column("kind", Text, nullable=False),  # message | step
    Column("message_kind", Text),  # text, receipt, … (a message's kind)
    Column("message_id", Text),
    Column("run_id", Text),
    Column("step_id", Text),
    Column("author_id", Text, nullable=False),
    Column("ts", DateTime(timezone=True), nullable=False),
    Column("words", Text, nullable=False),  # the text (a card's caption), a step's title
    Column("extra", Text, nullable=False),  # a card's words, a step's summary
    # What a machine heard in the message's voice notes (also in ``extra``, so found by it).
    Column("heard", Text),
    Column("tsv", TSVECTOR, nullable=False),
    PrimaryKeyConstraint("workspace_id", "doc_id"),
    Index("search_docs_seq", "workspace_id", "seq", unique=True),
    Index("search_docs_room", "workspace_id", "room_id"),
    # The GIN index (workspace_id, tsv) needs btree_gin: TSV_INDEX below.
    # Hash partitions by workspace (SEARCH_PARTITIONS of them, made by migration 1300): a
    # search reads the postings of one partition's few workspaces (docs/adr/0051).
    postgresql_partition_by="HASH (workspace_id)",
)
SEARCH_PARTITIONS = 32

# Leading with workspace_id, a search reads one workspace's postings only; no pending
# list (fastupdate = off), so a search never scans one (docs/adr/0029). The migration
# made it; a rebuild drops it and makes it again once the rows are in (faster than
# growing it row by row).
TSV_INDEX = "search_docs_tsv"
TSV_INDEX_DDL = (
    f"CREATE INDEX {TSV_INDEX} ON search_docs USING gin (workspace_id, tsv) WITH (fastupdate = off)"
)

# Each thread's room, folded from space.created, for the room_id of what is said in it.
search_threads = Table(
    "search_threads",
    metadata,
    Column("space_id", Text, primary_key=True),
    Column("workspace_id", Text, nullable=False),
    Column("room_id", Text, nullable=False),
    Index("search_threads_room", "room_id"),
)

# Every change of a checkpoint is notified on this channel as "<workspace_id> <seq>", when
# its transaction commits (a trigger: migration 1580, docs/adr/0111).
CHECKPOINT_CHANNEL = "search_checkpoint"

search_checkpoints = Table(
    "search_checkpoints",
    metadata,
    Column("workspace_id", Text, primary_key=True),
    Column("seq", BigInteger, nullable=False),
)

INDEX_TABLES = (search_docs, search_threads)
