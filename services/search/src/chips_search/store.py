"""The search index: one ``apply_*`` per event type folds it into ``search_docs``.

Applying is a pure function of the log, as the projector's is (docs/architecture/design.md §5): the
same events in seq order give the same rows, live or in a rebuild from seq 0. What a row says
comes from ``chips_common.rules.search``; the words are split and folded by Postgres
(``to_tsvector('chips_search', …)``), the same way every query's words are.

- ``message.post``: a row with the text (a card's caption) and the card's words;
- ``message.edited``: the new text replaces the old, so the old words are found no more;
- ``message.deleted``: the row goes (taking back is not found again);
- ``attachment.transcribed``: what a machine heard in a voice note joins its message's
  words, and ``heard``, so a hit that quotes it can say so (a post of a voice note alone
  has a row from the start, its words empty until then; docs/adr/0137);
- ``step.log``: a row per step of a run, its latest title and summary (a receipt's line);
- ``space.created`` of a thread: its room, for the rows said in it;
- ``space.erased``: every row of the space and its threads goes.

Hiding a message (delete for me) and membership are not here: they are the door's, and
the gateway reads them when it searches (docs/adr/0027).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, TypedDict

import orjson
from sqlalchemy import and_, delete, insert, or_, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db.search_tables import (
    TEXT_SEARCH_CONFIG,
    search_docs,
    search_threads,
)
from chips_common.events.wire import EventJson
from chips_common.rules.search import card_words, clean_text, message_words, step_words

Apply = Callable[["Index", EventJson], Awaitable[None]]


# The events said in a space whose room a row records.
SAID_IN = frozenset({"message.post", "step.log"})


def ts_of(event: EventJson) -> datetime:
    return datetime.fromisoformat(event["ts"].replace("Z", "+00:00"))


def step_doc_id(run_id: str, step_id: str) -> str:
    return f"step:{run_id}:{step_id}"


class PostRow(TypedDict):
    """A post waiting to be written, as the posts statement takes it (``POST_COLUMNS``)."""

    workspace_id: str
    doc_id: str
    seq: int
    space_id: str
    room_id: str
    message_kind: str
    author_id: str
    ts: datetime
    words: str
    extra: str


class Posts:
    """The posts of a batch gathered to be written in one statement, and the rooms of the
    spaces its page of events speaks in, read with the page.

    What the unlocked fold of posts alone keeps (docs/adr/0110), on either connection
    (docs/adr/0120): every room it needs was read with its page, so it asks nothing more.
    """

    def __init__(self) -> None:
        self.pending: list[PostRow] = []
        self.rooms: dict[str, str] = {}

    async def room_of(self, space_id: str) -> str:
        """The room whose members see a space, as read with the page."""
        return self.rooms[space_id]

    def take_posts(self) -> dict[str, str]:
        """The rows waiting to be written, taken: the posts statement's parameter."""
        rows: list[Mapping[str, object]]
        rows, self.pending = list(self.pending), []
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

    async def know_rooms(self, events: Iterable[EventJson]) -> None:
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
            await self.conn.execute(_INSERT_POSTS, self.take_posts())

    async def flush_and_save(self, reached: Mapping[str, int]) -> None:
        """Write the posts gathered and the checkpoints reached, in one statement."""
        names = sorted(reached)
        checkpoints = {"checkpoint_ws": names, "checkpoint_seq": [reached[w] for w in names]}
        if self.pending:
            await self.conn.execute(_INSERT_POSTS_AND_SAVE, {**self.take_posts(), **checkpoints})
        elif names:
            await self.conn.execute(_SAVE_CHECKPOINTS, checkpoints)

    async def apply(self, event: EventJson) -> None:
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
def posts_statement(where: str = "true") -> str:
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


_POSTS = posts_statement()
_SAVE = (
    "UPDATE search_checkpoints c SET seq = u.seq"
    " FROM unnest(CAST(:checkpoint_ws AS text[]), CAST(:checkpoint_seq AS bigint[]))"
    " AS u(w, seq) WHERE c.workspace_id = u.w"
)
_INSERT_POSTS = text(_POSTS)
_SAVE_CHECKPOINTS = text(_SAVE)
# A data-modifying WITH runs whether or not its rows are read: both writes, one round trip.
_INSERT_POSTS_AND_SAVE = text(f"WITH posted AS ({_POSTS}) {_SAVE}")


def has_voice_note(event: EventJson) -> bool:
    return any(a.get("kind") == "voice_note" for a in event.get("attachments") or ())


async def apply_message_post(index: Posts, event: EventJson) -> None:
    words, extra = message_words(event), card_words(event)
    if not (words or extra).strip() and not has_voice_note(event):
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


def _doc(event: EventJson, doc_id: str) -> Any:
    return and_(search_docs.c.workspace_id == event["workspace_id"], search_docs.c.doc_id == doc_id)


async def apply_message_edited(index: Index, event: EventJson) -> None:
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


_JOINED = (
    "CASE WHEN {col} IS NULL OR {col} = '' THEN CAST(:heard AS text)"
    " ELSE {col} || E'\\n' || CAST(:heard AS text) END"
)


async def apply_attachment_transcribed(index: Index, event: EventJson) -> None:
    heard = clean_text(event.get("transcript") or "").strip()
    if not heard:
        return
    extra = _JOINED.format(col="extra")
    await index.conn.execute(
        text(
            f"UPDATE search_docs SET extra = {extra}, heard = {_JOINED.format(col='heard')},"
            f" tsv = {_tsv('words', extra)}"
            " WHERE workspace_id = :workspace_id AND doc_id = :doc_id"
        ),
        {"heard": heard, "workspace_id": event["workspace_id"], "doc_id": event["message_id"]},
    )


async def apply_message_deleted(index: Index, event: EventJson) -> None:
    await index.conn.execute(delete(search_docs).where(_doc(event, event["message_id"])))


async def apply_step_log(index: Index, event: EventJson) -> None:
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


async def apply_space_created(index: Index, event: EventJson) -> None:
    parent = event.get("parent_space_id")
    if event.get("kind") != "thread" or not parent:
        return
    await index.conn.execute(
        insert(search_threads).values(
            space_id=event["space_id"], workspace_id=event["workspace_id"], room_id=parent
        )
    )
    index.rooms[event["space_id"]] = parent


async def apply_space_erased(index: Index, event: EventJson) -> None:
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
    "attachment.transcribed": apply_attachment_transcribed,
    "step.log": apply_step_log,
    "space.created": apply_space_created,
    "space.erased": apply_space_erased,
}
