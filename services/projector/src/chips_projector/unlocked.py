"""Posts alone, folded without a lock: two autocommit statements (docs/adr/0162).

A batch whose workspaces' next pages are posts alone (the common batch) is folded as the
search index folds its posts (docs/adr/0110): read each checkpoint and the page after it
in one statement, locking nothing; then, in one statement, move each checkpoint still at
what was read and write the posts (with their rooms' counts) of the workspaces moved, and
nothing of the others. The checkpoints still at what was read are locked in the order of
their ids, as every fold locks them; one moved meanwhile (another replica, the locked fold)
is not moved again, its posts are not written, and it is left to the locked fold
(``consumer.apply_batch``). Against the locked transaction (BEGIN, lock and read, write,
COMMIT) it saves two round trips a batch, and it writes the same rows: the posts'
statement is ``store``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import text

from chips_common.db.direct import Conn, compiled
from chips_common.events.wire import EventJson, canonical_event
from chips_projector.rules import post_row
from chips_projector.store import posts_written

_NO_END = 2**63 - 1

# Each workspace's checkpoint (0 and ``absent`` when it has no row yet) and the page of
# events after it, in one snapshot, locking nothing.
_READ = text(
    "SELECT u.w AS workspace_id, coalesce(c.seq, 0) AS checkpoint,"
    " c.workspace_id IS NULL AS absent, e.body, e.traceparent"
    " FROM unnest(CAST(:workspaces AS text[]), CAST(:upto AS bigint[])) AS u(w, upto)"
    " LEFT JOIN projector_checkpoints c ON c.workspace_id = u.w"
    " LEFT JOIN LATERAL (SELECT body, traceparent, seq FROM events"
    " WHERE workspace_id = u.w AND seq > coalesce(c.seq, 0) AND seq <= u.upto"
    " ORDER BY seq LIMIT :limit) AS e ON true"
    " ORDER BY u.w, e.seq"
)

# The checkpoints still at what was read, locked in the order of their ids and moved; the
# posts of the workspaces moved, their spaces' counts and last seqs (``store.posts_written``,
# as the locked fold's flush writes them); which workspaces moved.
_POSTS_IF_STILL = text(
    "WITH wanted AS (SELECT * FROM jsonb_to_recordset(CAST(:checkpoints AS jsonb))"
    " AS n(workspace_id text, from_seq bigint, seq bigint)),"
    " still AS (SELECT c.workspace_id, w.seq FROM projector_checkpoints c"
    " JOIN wanted w ON w.workspace_id = c.workspace_id AND c.seq = w.from_seq"
    " ORDER BY c.workspace_id FOR UPDATE OF c),"
    " moved AS (UPDATE projector_checkpoints c SET seq = s.seq FROM still s"
    " WHERE c.workspace_id = s.workspace_id RETURNING c.workspace_id), "
    + posts_written("p.workspace_id IN (SELECT workspace_id FROM moved)")
    + " SELECT workspace_id FROM moved"
)
_READ_DIRECT = compiled(_READ)
_POSTS_IF_STILL_DIRECT = compiled(_POSTS_IF_STILL)


@dataclass
class Read:
    """Each workspace's checkpoint, those that had no row, and the page after it (each
    event with its trace, in seq order)."""

    checkpoints: dict[str, int]
    absent: set[str]
    events: list[tuple[EventJson, str | None]]


async def read(conn: Conn, upto: Mapping[str, int | None], limit: int) -> Read:
    """Each workspace's checkpoint and the page after it (at most ``limit`` events, up to
    its ``upto``, the head when None), in one autocommit statement."""
    names = sorted(set(upto))
    params = {
        "workspaces": names,
        "upto": [_NO_END if (u := upto[w]) is None else u for w in names],
        "limit": limit,
    }
    rows: list[Any] = await (await conn.execute(_READ_DIRECT, params)).fetchall()
    found = Read({}, set(), [])
    for row in rows:
        if row.workspace_id not in found.checkpoints:
            found.checkpoints[row.workspace_id] = int(row.checkpoint)
            if row.absent:
                found.absent.add(row.workspace_id)
        if row.body is not None:
            found.events.append((canonical_event(row.body), row.traceparent))
    return found


async def posts_if_still(
    conn: Conn, posts: list[EventJson], moves: Mapping[str, tuple[int, int]]
) -> set[str]:
    """Move each checkpoint ``{workspace: (read, reached)}`` still at what was read and
    write the posts of those workspaces, in one autocommit statement; the workspaces
    moved."""
    names = sorted(moves)
    params = {
        "posts": orjson.dumps([post_row(e) for e in posts]).decode(),
        "checkpoints": orjson.dumps(
            [{"workspace_id": w, "from_seq": moves[w][0], "seq": moves[w][1]} for w in names]
        ).decode(),
    }
    rows: list[Any] = await (await conn.execute(_POSTS_IF_STILL_DIRECT, params)).fetchall()
    return {row.workspace_id for row in rows}
