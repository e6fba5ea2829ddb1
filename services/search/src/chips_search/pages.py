"""The fold's pages: each workspace's next events after its checkpoint, read for a batch.

Read with the checkpoints locked (:func:`lock_and_read`), or, for the posts alone, with no
lock and written back only if the checkpoints did not move meanwhile
(:func:`read_unlocked`, :func:`write_if_still`; docs/adr/0110). The fold itself, one
``apply_*`` per event type, is ``store`` (docs/adr/0141).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from sqlalchemy import text

from chips_common.db.direct import Conn, compiled
from chips_common.events.wire import EventJson, canonical_event
from chips_search.store import SAID_IN, Index, Posts, posts_statement

# Lock the batch's checkpoints (in the order of their ids, as every fold locks them, so two
# transactions never wait on each other in a circle), then read each workspace's next page
# of events after its checkpoint with the room of the thread each is said in, if it is one.
_LOCK_AND_READ = text(
    "WITH locked AS ("
    " INSERT INTO search_checkpoints (workspace_id, seq)"
    " SELECT w, 0 FROM unnest(CAST(:workspaces AS text[])) AS w ORDER BY w"
    " ON CONFLICT (workspace_id) DO UPDATE SET seq = search_checkpoints.seq"
    " RETURNING workspace_id, seq)"
    " SELECT l.workspace_id, l.seq AS checkpoint, e.body, e.traceparent,"
    " t.room_id AS thread_room"
    " FROM locked l"
    " JOIN unnest(CAST(:workspaces AS text[]), CAST(:upto AS bigint[])) AS u(w, upto)"
    " ON u.w = l.workspace_id"
    " LEFT JOIN LATERAL (SELECT body, traceparent, seq, space_id FROM events"
    " WHERE workspace_id = l.workspace_id AND seq > l.seq AND seq <= u.upto"
    " ORDER BY seq LIMIT :limit) AS e ON true"
    " LEFT JOIN search_threads t ON t.space_id = e.space_id"
    " ORDER BY l.workspace_id, e.seq"
)
_NO_END = 2**63 - 1


@dataclass
class FirstPage:
    """What ``lock_and_read`` read: each workspace's checkpoint (locked), and the first page
    of its events after it, each with its trace, in seq order."""

    checkpoints: dict[str, int]
    events: list[tuple[EventJson, str | None]]


async def lock_and_read(index: Index, upto: Mapping[str, int | None], limit: int) -> FirstPage:
    """Lock the workspaces' checkpoints until the transaction ends and read the first page
    (at most ``limit`` events of each, up to its ``upto``, the head when None) of what is
    after them, in one statement; the rooms of the spaces the page speaks in become known
    to ``index``."""
    names = sorted(set(upto))
    rows = await index.conn.execute(
        _LOCK_AND_READ,
        {
            "workspaces": names,
            "upto": [_NO_END if upto[w] is None else upto[w] for w in names],
            "limit": limit,
        },
    )
    page = FirstPage({}, [])
    for row in rows:
        page.checkpoints.setdefault(row.workspace_id, int(row.checkpoint))
        if row.body is None:
            continue
        event = canonical_event(row.body)
        page.events.append((event, row.traceparent))
        if event["type"] in SAID_IN and event["space_id"] not in index.rooms:
            index.rooms[event["space_id"]] = str(row.thread_room or event["space_id"])
    return page


# --- posts alone, without a lock (docs/adr/0110) ------------------------------------------

# Each workspace's next page of events after its checkpoint, read without locking it (an
# autocommit statement, one snapshot): the checkpoint (0 and ``absent`` when it has no row
# yet), and each event with the room of the thread it is said in, if it is one.
_READ = text(
    "SELECT u.w AS workspace_id, coalesce(c.seq, 0) AS checkpoint,"
    " c.workspace_id IS NULL AS absent, e.body, e.traceparent, t.room_id AS thread_room"
    " FROM unnest(CAST(:workspaces AS text[]), CAST(:upto AS bigint[])) AS u(w, upto)"
    " LEFT JOIN search_checkpoints c ON c.workspace_id = u.w"
    " LEFT JOIN LATERAL (SELECT body, traceparent, seq, space_id FROM events"
    " WHERE workspace_id = u.w AND seq > coalesce(c.seq, 0) AND seq <= u.upto"
    " ORDER BY seq LIMIT :limit) AS e ON true"
    " LEFT JOIN search_threads t ON t.space_id = e.space_id"
    " ORDER BY u.w, e.seq"
)

# Every post of the batch and every checkpoint, in one autocommit statement, each
# workspace's only if its checkpoint is still the one read: the checkpoints still at what
# was read are locked in the order of their ids (as every fold locks them) and moved, the
# workspaces that had none get theirs (a race for it is lost to whoever inserted first),
# and the posts of the workspaces moved are written. The statement answers which moved.
_POSTS_IF_STILL = text(
    "WITH wanted AS (SELECT * FROM unnest(CAST(:checkpoint_ws AS text[]),"
    " CAST(:checkpoint_from AS bigint[]), CAST(:checkpoint_seq AS bigint[]))"
    " AS w(workspace_id, from_seq, seq)),"
    " still AS (SELECT c.workspace_id, w.seq FROM search_checkpoints c"
    " JOIN wanted w ON w.workspace_id = c.workspace_id AND c.seq = w.from_seq"
    " ORDER BY c.workspace_id FOR UPDATE OF c),"
    " moved AS (UPDATE search_checkpoints c SET seq = s.seq FROM still s"
    " WHERE c.workspace_id = s.workspace_id RETURNING c.workspace_id),"
    " created AS (INSERT INTO search_checkpoints (workspace_id, seq)"
    " SELECT w.workspace_id, w.seq FROM wanted w"
    " WHERE w.workspace_id = ANY(CAST(:absent AS text[])) ORDER BY w.workspace_id"
    " ON CONFLICT (workspace_id) DO NOTHING RETURNING workspace_id),"
    " done AS (SELECT workspace_id FROM moved UNION ALL SELECT workspace_id FROM created),"
    f" posted AS ({posts_statement('u.workspace_id IN (SELECT workspace_id FROM done)')})"
    " SELECT workspace_id FROM done"
)

# The two statements of every batch of posts, for psycopg itself (docs/adr/0120).
_READ_DIRECT = compiled(_READ)
_POSTS_IF_STILL_DIRECT = compiled(_POSTS_IF_STILL)


@dataclass
class Read:
    """What ``read_unlocked`` read: each workspace's checkpoint, those that had no row, and
    the page of events after it, each with its trace, in seq order."""

    checkpoints: dict[str, int]
    absent: set[str]
    events: list[tuple[EventJson, str | None]]


class ReadParams(TypedDict):
    """The read's bind parameters: each workspace, the seq it reads up to, how many."""

    workspaces: list[str]
    upto: list[int]
    limit: int


class IfStillParams(TypedDict):
    """The conditional write's bind parameters: the posts (JSON), and each checkpoint's
    workspace, the seq it was read at and the one it moves to, and the absent ones."""

    posts: str
    checkpoint_ws: list[str]
    checkpoint_from: list[int]
    checkpoint_seq: list[int]
    absent: list[str]


def _read_params(upto: Mapping[str, int | None], limit: int) -> ReadParams:
    names = sorted(set(upto))
    return {
        "workspaces": names,
        "upto": [_NO_END if (u := upto[w]) is None else u for w in names],
        "limit": limit,
    }


def _read_from(posts: Posts, rows: Iterable[Any]) -> Read:
    read = Read({}, set(), [])
    for row in rows:
        if row.workspace_id not in read.checkpoints:
            read.checkpoints[row.workspace_id] = int(row.checkpoint)
            if row.absent:
                read.absent.add(row.workspace_id)
        if row.body is None:
            continue
        event = canonical_event(row.body)
        read.events.append((event, row.traceparent))
        if event["type"] in SAID_IN and event["space_id"] not in posts.rooms:
            posts.rooms[event["space_id"]] = str(row.thread_room or event["space_id"])
    return read


async def read_unlocked(index: Index, upto: Mapping[str, int | None], limit: int) -> Read:
    """Read each workspace's checkpoint and the page after it (at most ``limit`` events, up
    to its ``upto``, the head when None) in one statement, locking nothing; the rooms of
    the spaces the page speaks in become known to ``index``."""
    rows = await index.conn.execute(_READ, _read_params(upto, limit))
    return _read_from(index, rows)


async def read_unlocked_direct(
    conn: Conn, posts: Posts, upto: Mapping[str, int | None], limit: int
) -> Read:
    """:func:`read_unlocked` on psycopg itself, in autocommit (docs/adr/0120)."""
    cursor = await conn.execute(_READ_DIRECT, _read_params(upto, limit))
    return _read_from(posts, await cursor.fetchall())


def _if_still_params(
    posts: Posts, moves: Mapping[str, tuple[int, int]], absent: Iterable[str]
) -> IfStillParams:
    names = sorted(moves)
    return {
        "posts": posts.take_posts()["posts"],
        "checkpoint_ws": names,
        "checkpoint_from": [moves[w][0] for w in names],
        "checkpoint_seq": [moves[w][1] for w in names],
        "absent": sorted(set(absent) & set(names)),
    }


async def write_if_still(
    index: Index, moves: Mapping[str, tuple[int, int]], absent: Iterable[str]
) -> set[str]:
    """Write the posts gathered and move each checkpoint ``{workspace: (read, reached)}``, in
    one statement, only for the workspaces whose checkpoint is still what was read (or,
    for one of ``absent``, still has no row); the posts of the others are not written.
    Returns the workspaces moved."""
    rows = await index.conn.execute(_POSTS_IF_STILL, _if_still_params(index, moves, absent))
    return {row.workspace_id for row in rows}


async def write_if_still_direct(
    conn: Conn, posts: Posts, moves: Mapping[str, tuple[int, int]], absent: Iterable[str]
) -> set[str]:
    """:func:`write_if_still` on psycopg itself, in autocommit (docs/adr/0120)."""
    cursor = await conn.execute(_POSTS_IF_STILL_DIRECT, _if_still_params(posts, moves, absent))
    return {row.workspace_id for row in await cursor.fetchall()}
