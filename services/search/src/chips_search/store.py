"""The search index: one ``apply_*`` per event type folds it into ``search_docs``.

Applying is a pure function of the log, as the projector's is (DESIGN.md §5): the same
events in seq order give the same rows, live or in a rebuild from seq 0. What a row says
comes from ``chips_common.rules.search``; the words are split and folded by Postgres
(``to_tsvector('chips_search', …)``), the same way every query's words are.

- ``message.post``: a row with the text (a card's caption) and the card's words;
- ``message.edited``: the new text replaces the old, so the old words are found no more;
- ``message.deleted``: the row goes (taking back is not found again);
- ``step.log``: a row per step of a run, its latest title and summary (a receipt's line);
- ``space.created`` of a thread: its room, for the rows said in it;
- ``space.erased``: every row of the space and its threads goes.

Hiding a message (delete for me) and membership are not here: they are the door's, and
the gateway reads them when it searches (docs/adr/0027).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import and_, delete, insert, or_, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db.direct import Conn, compiled
from chips_common.db.search_tables import (
    TEXT_SEARCH_CONFIG,
    search_docs,
    search_threads,
)
from chips_common.events import canonical
from chips_common.rules.search import card_words, message_words, step_words

Apply = Callable[["Index", dict[str, Any]], Awaitable[None]]


# The events said in a space whose room a row records.
SAID_IN = frozenset({"message.post", "step.log"})


def ts_of(event: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(event["ts"].replace("Z", "+00:00"))


def step_doc_id(run_id: str, step_id: str) -> str:
    return f"step:{run_id}:{step_id}"


class Posts:
    """The posts of a batch gathered to be written in one statement, and the rooms of the
    spaces its page of events speaks in, read with the page.

    What the unlocked fold of posts alone keeps (docs/adr/0110), on either connection
    (docs/adr/0120): every room it needs was read with its page, so it asks nothing more.
    """

    def __init__(self) -> None:
        self.pending: list[dict[str, Any]] = []
        self.rooms: dict[str, str] = {}

    async def room_of(self, space_id: str) -> str:
        """The room whose members see a space, as read with the page."""
        return self.rooms[space_id]

    def _posts(self) -> dict[str, str]:
        rows, self.pending = self.pending, []
        return {
            "posts": orjson.dumps(
                [{name: row[name] for name in POST_COLUMNS} for row in rows]
            ).decode()
        }


class Index(Posts):
    """Writes to the index inside one transaction, for any number of workspaces.

    Posts are the bulk of the log; they are gathered and written in one statement,
    flushed before any other event is applied, so the order of the log is kept. The rooms
    of the spaces a page of events speaks in are read in one statement before it is
    applied (``know_rooms``).
    """

    def __init__(self, conn: AsyncConnection) -> None:
        super().__init__()
        self.conn = conn

    async def know_rooms(self, events: Iterable[dict[str, Any]]) -> None:
        """Read the rooms of the spaces these events are said in, that are not known yet."""
        unknown = {
            e["space_id"]
            for e in events
            if e["type"] in SAID_IN and e["space_id"] not in self.rooms
        }
        if not unknown:
            return
        t = search_threads.c
        rows = await self.conn.execute(
            select(t.space_id, t.room_id).where(t.space_id.in_(sorted(unknown)))
        )
        threads = {row.space_id: row.room_id for row in rows}
        for space_id in unknown:
            self.rooms[space_id] = str(threads.get(space_id, space_id))

    async def room_of(self, space_id: str) -> str:
        """The room whose members see a space: a thread's room, else the space itself."""
        if space_id not in self.rooms:
            room = (
                await self.conn.execute(
                    select(search_threads.c.room_id).where(search_threads.c.space_id == space_id)
                )
            ).scalar()
            self.rooms[space_id] = str(room) if room else space_id
        return self.rooms[space_id]

    async def flush(self) -> None:
        """Write the posts gathered so far (before an event of another type is applied)."""
        if self.pending:
            await self.conn.execute(_INSERT_POSTS, self._posts())

    async def flush_and_save(self, reached: Mapping[str, int]) -> None:
        """Write the posts gathered and the checkpoints reached, in one statement."""
        names = sorted(reached)
        checkpoints = {"checkpoint_ws": names, "checkpoint_seq": [reached[w] for w in names]}
        if self.pending:
            await self.conn.execute(_INSERT_POSTS_AND_SAVE, {**self._posts(), **checkpoints})
        elif names:
            await self.conn.execute(_SAVE_CHECKPOINTS, checkpoints)

    async def apply(self, event: dict[str, Any]) -> None:
        if event["type"] == "message.post":
            await apply_message_post(self, event)
            return
        apply = APPLY.get(event["type"])
        if apply is not None:
            await self.flush()
            await apply(self, event)


POST_COLUMNS = (
    "workspace_id",
    "doc_id",
    "seq",
    "space_id",
    "room_id",
    "message_kind",
    "author_id",
    "ts",
    "words",
    "extra",
)


def _tsv(words: str, extra: str) -> str:
    """The one expression a row's tsvector is made by: Postgres splits and folds the words."""
    return (
        f"to_tsvector('{TEXT_SEARCH_CONFIG}', CAST({words} AS text) || E'\\n' || "
        f"CAST({extra} AS text))"
    )


# Every post of a batch in one statement: the rows as one JSON document (psycopg adapts
# array parameters element by element in Python, ADR 0117), each tsvector made by the one
# expression every row's is; ``where`` keeps some of them (``u`` is a row).
def _posts(where: str = "true") -> str:
    return (
        "INSERT INTO search_docs (workspace_id, doc_id, seq, space_id, room_id, kind,"
        " message_kind, message_id, author_id, ts, words, extra, tsv)"
        " SELECT u.workspace_id, u.doc_id, u.seq, u.space_id, u.room_id, 'message',"
        " u.message_kind, u.doc_id, u.author_id, u.ts, u.words, u.extra,"
        f" {_tsv('u.words', 'u.extra')}"
        " FROM jsonb_to_recordset(CAST(:posts AS jsonb)) AS u(workspace_id text,"
        " doc_id text, seq bigint, space_id text, room_id text, message_kind text,"
        f" author_id text, ts timestamptz, words text, extra text) WHERE {where}"
        " ON CONFLICT (workspace_id, doc_id) DO NOTHING"
    )


_POSTS = _posts()
_SAVE = (
    "UPDATE search_checkpoints c SET seq = u.seq"
    " FROM unnest(CAST(:checkpoint_ws AS text[]), CAST(:checkpoint_seq AS bigint[]))"
    " AS u(w, seq) WHERE c.workspace_id = u.w"
)
_INSERT_POSTS = text(_POSTS)
_SAVE_CHECKPOINTS = text(_SAVE)
# A data-modifying WITH runs whether or not its rows are read: both writes, one round trip.
_INSERT_POSTS_AND_SAVE = text(f"WITH posted AS ({_POSTS}) {_SAVE}")


async def apply_message_post(index: Posts, event: dict[str, Any]) -> None:
    words, extra = message_words(event), card_words(event)
    if not (words or extra).strip():
        return
    index.pending.append(
        {
            "workspace_id": event["workspace_id"],
            "doc_id": event["message_id"],
            "seq": event["seq"],
            "space_id": event["space_id"],
            "room_id": await index.room_of(event["space_id"]),
            "message_kind": event.get("kind", "text"),
            "author_id": event["actor"]["id"],
            "ts": ts_of(event),
            "words": words,
            "extra": extra,
        }
    )


def _doc(event: dict[str, Any], doc_id: str) -> Any:
    return and_(search_docs.c.workspace_id == event["workspace_id"], search_docs.c.doc_id == doc_id)


async def apply_message_edited(index: Index, event: dict[str, Any]) -> None:
    await index.conn.execute(
        text(
            f"UPDATE search_docs SET words = CAST(:words AS text), tsv = {_tsv(':words', 'extra')}"
            " WHERE workspace_id = :workspace_id AND doc_id = :doc_id"
        ),
        {
            "words": message_words(event),
            "workspace_id": event["workspace_id"],
            "doc_id": event["message_id"],
        },
    )


async def apply_message_deleted(index: Index, event: dict[str, Any]) -> None:
    await index.conn.execute(delete(search_docs).where(_doc(event, event["message_id"])))


async def apply_step_log(index: Index, event: dict[str, Any]) -> None:
    title, summary = step_words(event)
    doc_id = step_doc_id(event["run_id"], event["step_id"])
    found = (
        await index.conn.execute(
            select(search_docs.c.words, search_docs.c.extra).where(_doc(event, doc_id))
        )
    ).first()
    if found is None:
        if not (title or summary):
            return
        await index.conn.execute(
            text(
                "INSERT INTO search_docs (workspace_id, doc_id, seq, space_id, room_id, kind,"
                " run_id, step_id, author_id, ts, words, extra, tsv)"
                " SELECT :workspace_id, :doc_id, :seq, :space_id, :room_id, 'step',"
                " :run_id, :step_id, :author_id, :ts, CAST(:words AS text),"
                f" CAST(:extra AS text), {_tsv(':words', ':extra')}"
            ),
            {
                "workspace_id": event["workspace_id"],
                "doc_id": doc_id,
                "seq": event["seq"],
                "space_id": event["space_id"],
                "room_id": await index.room_of(event["space_id"]),
                "run_id": event["run_id"],
                "step_id": event["step_id"],
                "author_id": event["actor"]["id"],
                "ts": ts_of(event),
                "words": title or "",
                "extra": summary or "",
            },
        )
        return
    # A step is reported again as it moves on: what it says now replaces what it said,
    # and it keeps its place (its first seq) so a page never moves under a reader.
    if title is None and summary is None:
        return
    words = title if title is not None else found.words
    extra = summary if summary is not None else found.extra
    await index.conn.execute(
        text(
            f"UPDATE search_docs SET words = CAST(:words AS text), extra = CAST(:extra AS text),"
            f" tsv = {_tsv(':words', ':extra')}"
            " WHERE workspace_id = :workspace_id AND doc_id = :doc_id"
        ),
        {"words": words, "extra": extra, "workspace_id": event["workspace_id"], "doc_id": doc_id},
    )


async def apply_space_created(index: Index, event: dict[str, Any]) -> None:
    parent = event.get("parent_space_id")
    if event.get("kind") != "thread" or not parent:
        return
    await index.conn.execute(
        insert(search_threads).values(
            space_id=event["space_id"], workspace_id=event["workspace_id"], room_id=parent
        )
    )
    index.rooms[event["space_id"]] = parent


async def apply_space_erased(index: Index, event: dict[str, Any]) -> None:
    space_id = event["space_id"]
    erased = [space_id, *(event.get("threads") or [])]
    d = search_docs.c
    await index.conn.execute(
        delete(search_docs).where(
            and_(
                d.workspace_id == event["workspace_id"],
                or_(d.room_id == space_id, d.space_id.in_(erased)),
            )
        )
    )
    await index.conn.execute(
        delete(search_threads).where(
            or_(search_threads.c.room_id == space_id, search_threads.c.space_id.in_(erased))
        )
    )
    index.rooms.clear()


APPLY: dict[str, Apply] = {
    "message.edited": apply_message_edited,
    "message.deleted": apply_message_deleted,
    "step.log": apply_step_log,
    "space.created": apply_space_created,
    "space.erased": apply_space_erased,
}


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
    events: list[tuple[dict[str, Any], str | None]]


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
        event = canonical(row.body)
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
    f" posted AS ({_posts('u.workspace_id IN (SELECT workspace_id FROM done)')})"
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
    events: list[tuple[dict[str, Any], str | None]]


def _read_params(upto: Mapping[str, int | None], limit: int) -> dict[str, Any]:
    names = sorted(set(upto))
    return {
        "workspaces": names,
        "upto": [_NO_END if upto[w] is None else upto[w] for w in names],
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
        event = canonical(row.body)
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
) -> dict[str, Any]:
    names = sorted(moves)
    return {
        **posts._posts(),
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
