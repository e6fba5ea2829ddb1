"""Reading the search index: read-only, scoped by membership now (docs/adr/0027).

The search service writes ``search_docs``; the gateway only reads it, as it reads the
projector's read models. Whom a row may be shown to is never taken from the index: every
search reads the caller's rooms from the door state (``memberships``, the same source as
every other read's membership check) and asks the index for rows of those rooms (and
their threads) only. A line the caller hid for themselves is left out by the door's
``message_hidden``.

A search is one statement, so one round trip and one snapshot (docs/adr/0066): that the
caller's credential still stands, the log's head and the index's checkpoint, the caller's
rooms now (and, with ``space_id``, that the space is one of them or a thread of one), and
the page of hits with its snippets. Who a token is (its credential, workspace and
participant, which never change) is remembered by the gateway after the first search; that
the credential was not withdrawn is checked by every search, in its statement.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

import psycopg
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common.db.principals import principal_for_token
from chips_common.db.retry import once_more
from chips_common.db.search_tables import CHECKPOINT_CHANNEL, TEXT_SEARCH_CONFIG
from chips_common.nats.nudge import Nudger, no_nudge
from chips_common.rules.devices import SESSION_PREFIX, session_device
from chips_common.rules.search import HEADLINE_OPTIONS
from chips_common.tokens import hash_token
from chips_gateway.metrics import SEARCH_WAIT_READS, SEARCH_WAITS

# What a search stands on, read once in the statement's snapshot: the credential still
# stands (as chips_common.db.principals decides it), the head, the checkpoint, the rooms
# the caller is in now, and with ``space_id`` the space's room (a thread's parent).
_STANDING = f"""
WITH me AS MATERIALIZED (
    SELECT EXISTS (
               SELECT 1 FROM credentials c JOIN participants p ON p.id = c.participant_id
               WHERE c.id = :credential_id AND c.revoked_at IS NULL
           ) AS known,
           coalesce((SELECT head_seq FROM workspaces WHERE id = :workspace_id), 0)
               AS head_seq,
           coalesce((SELECT seq FROM search_checkpoints WHERE workspace_id = :workspace_id), 0)
               AS as_of_seq,
           ARRAY(SELECT space_id FROM memberships
                 WHERE workspace_id = :workspace_id AND participant_id = :participant_id
                 ORDER BY space_id)
               AS rooms,
           {{parent}} AS parent
)
SELECT me.known, me.head_seq, me.as_of_seq, {{allowed}} AS allowed,
       CASE WHEN {{fresh}} THEN NULL ELSE me.rooms END AS rooms_now,
       h.doc_id, h.seq, h.space_id, h.room_id, h.kind, h.message_kind, h.message_id,
       h.run_id, h.step_id, h.author_id, h.ts, h.headline, h.voice_note
FROM me LEFT JOIN LATERAL (
    SELECT d.*,
           ts_headline('{TEXT_SEARCH_CONFIG}', d.words || E'\\n' || d.extra, query,
                       :headline) AS headline,
           coalesce(to_tsvector('{TEXT_SEARCH_CONFIG}', d.heard) @@ query, false)
               AS voice_note
    FROM (
        SELECT d.doc_id, d.seq, d.space_id, d.room_id, d.kind, d.message_kind,
               d.message_id, d.run_id, d.step_id, d.author_id, d.ts, d.words, d.extra,
               d.heard
        FROM search_docs d
        WHERE me.known AND {{allowed}} AND {{fresh}}
          AND d.workspace_id = :workspace_id
          AND d.tsv @@ to_tsquery('{TEXT_SEARCH_CONFIG}', :tsquery)
          AND {{scope}}
          AND d.seq < :before
          AND NOT EXISTS (
              SELECT 1 FROM message_hidden h
              WHERE h.message_id = d.message_id AND h.participant_id = :participant_id
          )
        ORDER BY d.seq DESC
        LIMIT :limit
    ) d, to_tsquery('{TEXT_SEARCH_CONFIG}', :tsquery) AS query
) h ON true
ORDER BY h.seq DESC
"""

# The newest hits of the caller's rooms older than the cursor, then snippets for them
# alone. The tsquery comes from chips_common.rules.search.build_tsquery (each word typed
# quoted) and is bound, never spliced; Postgres folds it with the index's configuration.
#
# The rooms are bound too (``:rooms``, sorted: the rooms the gateway last saw the caller
# in), so that the planner knows how many rows they hold: read in the statement, they
# would be a value it cannot see, and its guess made it gather thousands of rows of a
# common word through the GIN index rather than walk the newest rows (docs/adr/0066). They
# are only a guess the statement checks: hits come only if they are exactly the rooms
# ``memberships`` says now, in the same snapshot; if not, the statement answers the rooms
# now (``rooms_now``) and no hits, and the gateway asks again with them.
SEARCH_SQL = _STANDING.format(
    parent="CAST(NULL AS text)",
    allowed="true",
    fresh="(me.rooms = CAST(:rooms AS text[]))",
    scope="d.room_id = ANY(CAST(:rooms AS text[]))",
)
# One space: a room with its threads, or a thread alone; the caller must be in its room.
SEARCH_SPACE_SQL = _STANDING.format(
    parent="(SELECT parent_space_id FROM spaces"
    " WHERE id = :space_id AND workspace_id = :workspace_id)",
    allowed="(coalesce(me.parent, :space_id) = ANY(me.rooms))",
    fresh="true",
    scope="d.room_id = coalesce(me.parent, :space_id)"
    " AND (me.parent IS NULL OR d.space_id = :space_id)",
)

# Parsed once: a text() made per search costs more than the rest of the gateway's own work.
_SEARCH = text(SEARCH_SQL)
_SEARCH_SPACE = text(SEARCH_SPACE_SQL)
_CREDENTIAL_STANDS = text(
    "SELECT 1 FROM credentials c JOIN participants p ON p.id = c.participant_id"
    " WHERE c.id = :credential_id AND c.revoked_at IS NULL"
)
_CHECKPOINT = text("SELECT seq FROM search_checkpoints WHERE workspace_id = :workspace_id")

log = logging.getLogger(__name__)

# A wait for the index reads the checkpoint again this often while it hears the index's
# notifications (a net under them: one lost to a reconnection costs this much at most),
# and every POLL_SECONDS while it does not.
RECHECK_SECONDS = 0.1
POLL_SECONDS = 0.005

# How many callers' tokens a gateway remembers (a token's hash and who it is: ~300 bytes).
KNOWN_TOKENS = 10_000


@dataclass(frozen=True)
class Hit:
    doc_id: str
    seq: int
    space_id: str
    room_id: str
    kind: str
    message_kind: str | None
    message_id: str | None
    run_id: str | None
    step_id: str | None
    author_id: str
    ts: datetime
    headline: str
    # What it quotes was heard in a voice note (docs/adr/0137).
    voice_note: bool = False


@dataclass(frozen=True)
class Found:
    """One page of hits, and the seq of the log the index had folded in when it answered."""

    as_of_seq: int
    hits: list[Hit]


@dataclass(frozen=True)
class Searcher:
    """Who a token is, as far as a search needs: facts of a credential that never change."""

    credential_id: str
    workspace_id: str
    participant_id: str


class NotInSpace(Exception):
    """``space_id`` names a space the caller is not in now (or none at all)."""


class UnknownToken(Exception):
    """The token is not known, or its credential was withdrawn."""


@dataclass(frozen=True)
class _Answer:
    known: bool
    allowed: bool
    head_seq: int
    found: Found
    # The caller's rooms now, when they were not the rooms the search was sent with.
    rooms_now: list[str] | None


class IndexProgress:
    """The search index's checkpoints as the search service commits them, heard on a
    connection of the gateway's own that listens on ``CHECKPOINT_CHANNEL`` (docs/adr/0111).

    A notification is sent when the fold that moved the checkpoint commits, so a seq heard
    here is one a statement sent after it sees. ``listening`` is False while the
    connection is down (being made again): a waiter then reads the checkpoint itself.
    """

    def __init__(self, database_url: str) -> None:
        url = make_url(database_url).set(drivername="postgresql")
        self.conninfo = url.render_as_string(hide_password=False)
        self.listening = False
        # The last seq heard of each workspace, and an event set (and replaced) when a
        # newer one is heard, for whoever waits on that workspace.
        self.seen: dict[str, int] = {}
        self.changed: dict[str, asyncio.Event] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._listen())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def heard(self, workspace_id: str) -> tuple[int, asyncio.Event]:
        """The last seq heard of the workspace, and the event set when a newer one is: taken
        together, so that nothing heard after the seq is missed."""
        changed = self.changed.get(workspace_id)
        if changed is None:
            changed = self.changed[workspace_id] = asyncio.Event()
        return self.seen.get(workspace_id, 0), changed

    def _hear(self, payload: str) -> None:
        workspace_id, _, seq = payload.partition(" ")
        with contextlib.suppress(ValueError):
            self.seen[workspace_id] = int(seq)
        changed = self.changed.pop(workspace_id, None)
        if changed is not None:
            changed.set()

    def _wake_everyone(self) -> None:
        changed, self.changed = self.changed, {}
        for event in changed.values():
            event.set()

    async def _listen(self) -> None:
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
                async with conn:
                    await conn.execute(f"LISTEN {CHECKPOINT_CHANNEL}")
                    self.listening = True
                    async for notice in conn.notifies():
                        self._hear(notice.payload)
            except Exception:
                log.warning("not hearing the search index's checkpoints; trying again in 1s")
            finally:
                # Whoever waits reads the checkpoint itself until the connection is back.
                self.listening = False
                self._wake_everyone()
            await asyncio.sleep(1)


class SearchReader:
    """Searches, each one statement on a connection of ``engine``.

    ``engine`` is the gateway's reading engine for searches: autocommit (a statement is
    its own snapshot; no BEGIN, no ROLLBACK) and no check of a connection as it leaves the
    pool (a dead one is found by the statement, which goes once more on a new one).
    """

    def __init__(
        self,
        engine: AsyncEngine,
        progress: IndexProgress | None = None,
        signing_key: str = "",
        nudge: Nudger = no_nudge,
    ) -> None:
        self.engine = engine
        self.progress = progress
        self.signing_key = signing_key
        # The index holds events a moment, to fold them together: a search that waits asks
        # for its workspace (docs/adr/0168).
        self.nudge = nudge
        self.tokens: OrderedDict[str, Searcher] = OrderedDict()
        # The rooms each remembered credential was last seen in: the planner's guess.
        self.rooms: dict[str, list[str]] = {}

    async def searcher(self, token: str) -> Searcher:
        """Who the token is: remembered, or read once (a withdrawn credential is read again
        by every search's statement, which says so).

        Raises:
            UnknownToken: the token is not known, or its credential was withdrawn.
        """
        if token.startswith(SESSION_PREFIX) and not session_device(self.signing_key, token):
            raise UnknownToken  # a device's session that expired (ADR 0125)
        digest = hash_token(token)
        known = self.tokens.get(digest)
        if known is not None:
            self.tokens.move_to_end(digest)
            return known
        principal = await principal_for_token(self.engine, token, self.signing_key)
        if principal is None:
            raise UnknownToken
        known = Searcher(principal.credential_id, principal.workspace_id, principal.participant_id)
        self.tokens[digest] = known
        if len(self.tokens) > KNOWN_TOKENS:
            _, gone = self.tokens.popitem(last=False)
            self.rooms.pop(gone.credential_id, None)
        return known

    def forget_credential(self, who: Searcher) -> None:
        """A withdrawn credential is not remembered (withdrawing is rare: a scan)."""
        for digest in [d for d, known in self.tokens.items() if known == who]:
            del self.tokens[digest]
        self.rooms.pop(who.credential_id, None)

    async def still_known(self, who: Searcher) -> bool:
        """Whether the credential still stands (for an answer that sends no search)."""

        async def read(conn: AsyncConnection) -> bool:
            found = await conn.execute(_CREDENTIAL_STANDS, {"credential_id": who.credential_id})
            return found.first() is not None

        return await once_more(self.engine, read)

    async def checkpoint(self, workspace_id: str) -> int:
        async def read(conn: AsyncConnection) -> int:
            seq = (await conn.execute(_CHECKPOINT, {"workspace_id": workspace_id})).scalar()
            return int(seq or 0)

        return await once_more(self.engine, read)

    async def wait_for(self, workspace_id: str, seq: int, timeout: float) -> None:
        """Wait (a bounded while) until the index has folded in ``seq``.

        Woken by the index's notification the moment the fold that reaches ``seq`` commits;
        without one within ``RECHECK_SECONDS`` (or while not listening, every
        ``POLL_SECONDS``) the checkpoint is read. The search is sent again after the wait,
        whatever ended it, and says the seq it answers as of, so a wait cut short costs
        freshness said, never a stale answer passed off as fresh.

        The index may be holding the workspace's events to fold them with later ones: it
        is asked for the workspace first (a nudge, docs/adr/0168), and again whenever the
        checkpoint is read.
        """
        deadline = time.monotonic() + timeout
        await self.nudge("search", workspace_id, seq)
        while True:
            progress = self.progress
            if progress is not None and progress.listening:
                heard, changed = progress.heard(workspace_id)
                if heard >= seq:
                    SEARCH_WAITS.labels("heard").inc()
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    SEARCH_WAITS.labels("timeout").inc()
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), min(left, RECHECK_SECONDS))
                    continue
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    SEARCH_WAITS.labels("timeout").inc()
                    return
                await asyncio.sleep(min(left, POLL_SECONDS))
            SEARCH_WAIT_READS.inc()
            if await self.checkpoint(workspace_id) >= seq:
                SEARCH_WAITS.labels("read").inc()
                return
            await self.nudge("search", workspace_id, seq)

    async def search(
        self,
        who: Searcher,
        tsquery: str,
        *,
        space_id: str | None,
        before: int,
        limit: int,
        after_seq: int | None,
        wait: float,
    ) -> Found:
        """The caller's hits, newest first: at most ``limit``, each older than ``before``,
        as of ``after_seq`` at least (the log's head when None; never past it: the index
        cannot hold what the log does not), waited for at most ``wait`` seconds.

        Raises:
            UnknownToken: the caller's credential was withdrawn.
            NotInSpace: ``space_id`` is not a space the caller is in now.
        """
        params: dict[str, object] = {  # the statement's bind parameters
            "credential_id": who.credential_id,
            "workspace_id": who.workspace_id,
            "participant_id": who.participant_id,
            "tsquery": tsquery,
            "before": before,
            "limit": limit,
            "headline": HEADLINE_OPTIONS,
        }
        if space_id is None:
            sql = _SEARCH
            # None the first time: the statement answers the rooms, and is sent again.
            params["rooms"] = self.rooms.get(who.credential_id)
        else:
            sql = _SEARCH_SPACE
            params["space_id"] = space_id

        async def read(conn: AsyncConnection) -> _Answer:
            rows = (await conn.execute(sql, params)).all()
            first = rows[0]
            hits = [Hit(*row[5:]) for row in rows if row.doc_id is not None]
            return _Answer(
                bool(first.known),
                bool(first.allowed),
                int(first.head_seq),
                Found(int(first.as_of_seq), hits),
                None if first.rooms_now is None else list(first.rooms_now),
            )

        async def answer() -> _Answer:
            found = await once_more(self.engine, read)
            for _ in range(3):
                if not found.known or found.rooms_now is None:
                    break
                # The caller's rooms moved (or were not known yet): as they are now. (Three
                # times at most: rooms that keep moving meanwhile get no hits, never others.)
                self.rooms[who.credential_id] = params["rooms"] = found.rooms_now
                found = await once_more(self.engine, read)
            if not found.known:
                raise UnknownToken
            if not found.allowed:
                raise NotInSpace(space_id)
            return found

        first = await answer()
        target = first.head_seq if after_seq is None else min(after_seq, first.head_seq)
        if first.found.as_of_seq >= target:
            return first.found
        # The index is behind what the caller may have seen: wait for it, then search again
        # (the whole statement: membership may have moved on meanwhile too).
        await self.wait_for(who.workspace_id, target, wait)
        return (await answer()).found
