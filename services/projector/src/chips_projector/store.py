"""The read models: one ``apply_*`` per event type folds it into the tables.

Applying is a pure function of the log: the same events in seq order give the same
rows, whether they arrive live or in a rebuild from seq 0 (docs/architecture/design.md §5).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypedDict

import orjson
from sqlalchemy import and_, delete, insert, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.db import projector_tables as pt
from chips_common.db.direct import Conn, compiled
from chips_common.events.wire import EventJson, canonical_event
from chips_common.ids import message_id_for
from chips_common.rules.lines import system_line
from chips_projector import erase, threads, words
from chips_projector.rules import (
    BEHIND_AGENTS,
    agent_changes,
    agent_facts,
    draws_a_line,
    first_members,
    moves_behind_agents,
    post_row,
    space_changes,
    ts_of,
)
from chips_projector.runs import RUN_APPLY

Apply = Callable[[AsyncConnection, EventJson], Awaitable[None]]


async def touch(conn: AsyncConnection, space_id: str, seq: int, messages: int = 0) -> None:
    await conn.execute(
        update(pt.rm_spaces)
        .where(pt.rm_spaces.c.id == space_id)
        .values(last_seq=seq, message_count=pt.rm_spaces.c.message_count + messages)
    )


async def add_member(conn: AsyncConnection, event: EventJson, who: str, standing: str) -> None:
    await conn.execute(
        pg_insert(pt.rm_members)
        .values(
            space_id=event["space_id"],
            participant_id=who,
            workspace_id=event["workspace_id"],
            standing=standing,
            since_seq=event["seq"],
        )
        .on_conflict_do_nothing()
    )


async def apply_space_created(conn: AsyncConnection, event: EventJson) -> None:
    if event["kind"] == "thread":
        await threads.apply_thread_created(conn, event)
        return
    # A harness opens a space for its owner (opened_for), who owns it; the harness is in it.
    actor = event["actor"]["id"]
    await conn.execute(
        insert(pt.rm_spaces).values(
            id=event["space_id"],
            workspace_id=event["workspace_id"],
            kind=event["kind"],
            title=event.get("title"),
            created_by=actor,
            created_seq=event["seq"],
            created_at=ts_of(event),
            last_seq=event["seq"],
            message_count=0,
            home_of=event.get("home_of"),
            key=event.get("key"),
            key_shared=bool(event.get("shared")),
            asked_of=event.get("asked_of"),
        )
    )
    for who, standing in first_members(event):
        await add_member(conn, event, who, standing)
    if event.get("key") is not None:
        await add_opener(conn, event)


async def apply_space_claimed(conn: AsyncConnection, event: EventJson) -> None:
    await conn.execute(
        update(pt.rm_spaces)
        .where(and_(pt.rm_spaces.c.id == event["space_id"], pt.rm_spaces.c.key.is_(None)))
        .values(key=event["key"], key_shared=bool(event.get("shared")))
    )
    await add_opener(conn, event)
    await touch(conn, event["space_id"], event["seq"])


async def add_opener(conn: AsyncConnection, event: EventJson) -> None:
    await conn.execute(
        insert(pt.rm_openers).values(
            space_id=event["space_id"],
            harness_id=event["actor"]["id"],
            workspace_id=event["workspace_id"],
            since_seq=event["seq"],
        )
    )


async def apply_membership_added(conn: AsyncConnection, event: EventJson) -> None:
    standing = event.get("standing", "member")
    await add_member(conn, event, event["participant_id"], standing)
    await touch(conn, event["space_id"], event["seq"])
    if draws_a_line(standing):
        await draw_line(conn, event)


async def apply_membership_removed(conn: AsyncConnection, event: EventJson) -> None:
    gone = (
        await conn.execute(
            delete(pt.rm_members)
            .where(
                and_(
                    pt.rm_members.c.space_id == event["space_id"],
                    pt.rm_members.c.participant_id == event["participant_id"],
                )
            )
            .returning(pt.rm_members.c.standing)
        )
    ).scalar()
    await touch(conn, event["space_id"], event["seq"])
    if draws_a_line(gone):
        await draw_line(conn, event)


async def apply_membership_replaced(conn: AsyncConnection, event: EventJson) -> None:
    """An agent took another's place in a room (docs/adr/0071): what the replaced one said
    there reads as the agent's from then on (docs/adr/0136): the room's lines, not the
    muted lines of what it did to the room. A harness it replaced stays, behind its agents
    there, as the door keeps it; an agent it replaced leaves by its own ``membership.removed``."""
    msg = pt.rm_messages
    await conn.execute(
        update(msg)
        .where(
            and_(
                msg.c.space_id == event["space_id"],
                msg.c.author_id == event["replaced"],
                msg.c.kind != "system",
            )
        )
        .values(author_id=event["participant_id"])
    )
    if not moves_behind_agents(event):
        return
    await conn.execute(
        update(pt.rm_members)
        .where(
            and_(
                pt.rm_members.c.space_id == event["space_id"],
                pt.rm_members.c.participant_id == event["replaced"],
            )
        )
        .values(standing=BEHIND_AGENTS)
    )


async def apply_space_updated(conn: AsyncConnection, event: EventJson) -> None:
    await conn.execute(
        update(pt.rm_spaces)
        .where(pt.rm_spaces.c.id == event["space_id"])
        .values(**space_changes(event))
    )
    await draw_line(conn, event)


async def apply_space_lock_set(conn: AsyncConnection, event: EventJson) -> None:
    await conn.execute(
        update(pt.rm_spaces)
        .where(pt.rm_spaces.c.id == event["space_id"])
        .values(locked=event["locked"], last_seq=event["seq"])
    )
    await draw_line(conn, event)


async def apply_space_lead_set(conn: AsyncConnection, event: EventJson) -> None:
    """The room's lead, for its sheet and the space reads (docs/adr/0090)."""
    await conn.execute(
        update(pt.rm_spaces)
        .where(pt.rm_spaces.c.id == event["space_id"])
        .values(lead_id=event.get("agent_id"))
    )
    await draw_line(conn, event)


async def apply_participant_joined(conn: AsyncConnection, event: EventJson) -> None:
    await conn.execute(
        insert(pt.rm_participants).values(
            id=event["participant_id"],
            workspace_id=event["workspace_id"],
            kind=event["kind"],
            name=event["name"],
            role=event.get("role", "member"),
            owner_id=event.get("owner_id"),
            joined_seq=event["seq"],
        )
    )


async def apply_person_updated(conn: AsyncConnection, event: EventJson) -> None:
    """A person's role, or whether they are active (docs/adr/0125), and the rooms their
    deactivation handed on; their name or time zone, as they changed it."""
    fields = ("role", "active", "name", "time_zone")
    given: Mapping[str, object] = event
    change = {k: given[k] for k in fields if given.get(k) is not None}
    if change:
        await conn.execute(
            update(pt.rm_participants)
            .where(pt.rm_participants.c.id == event["participant_id"])
            .values(**change)
        )
    handed = event.get("rooms_handed") or []
    if handed:
        # Deactivated: the rooms they owned are the heir's (docs/adr/0144). An heir not
        # in a room comes in as its owner by the membership.added logged next.
        m = pt.rm_members.c
        for who, standing in ((event["participant_id"], "member"), (event["rooms_to"], "owner")):
            await conn.execute(
                update(pt.rm_members)
                .where(and_(m.space_id.in_(handed), m.participant_id == who))
                .values(standing=standing)
            )


async def apply_agent_registered(conn: AsyncConnection, event: EventJson) -> None:
    """An agent is a participant of kind ``agent``, its harness its owner (docs/adr/0070),
    with its facts as the door keeps them."""
    await conn.execute(
        insert(pt.rm_participants).values(
            id=event["agent_id"],
            workspace_id=event["workspace_id"],
            kind="agent",
            name=event["name"],
            role="member",
            owner_id=event["harness_id"],
            joined_seq=event["seq"],
            agent=agent_facts(event),
        )
    )


async def apply_agent_updated(conn: AsyncConnection, event: EventJson) -> None:
    """Renamed (by whom, when a person did), archived or brought back."""
    p = pt.rm_participants
    facts = (await conn.execute(select(p.c.agent).where(p.c.id == event["agent_id"]))).scalar()
    changes = agent_changes(facts, event)
    if changes:
        await conn.execute(update(p).where(p.c.id == event["agent_id"]).values(**changes))


async def apply_harness_declared(conn: AsyncConnection, event: EventJson) -> None:
    await conn.execute(
        update(pt.rm_participants)
        .where(pt.rm_participants.c.id == event["harness_id"])
        .values(capabilities=event["capabilities"])
    )


async def names(conn: AsyncConnection, ids: set[str]) -> dict[str, str]:
    rows = await conn.execute(
        select(pt.rm_participants.c.id, pt.rm_participants.c.name).where(
            pt.rm_participants.c.id.in_(ids)
        )
    )
    return {row.id: row.name for row in rows}


async def draw_line(conn: AsyncConnection, event: EventJson) -> None:
    """The muted ``system`` line a room operation draws (docs/adr/0006).

    It is a row of the room's messages, with the id of its event's ULID and the actor as
    its author, so a rebuild draws the same line; it does not count as a message.
    """
    ids = {event["actor"]["id"], event.get("participant_id", ""), event.get("agent_id") or ""}
    known = await names(conn, ids)
    text = system_line(event, lambda pid: known.get(pid, pid))
    if text is None:
        return
    await conn.execute(
        insert(pt.rm_messages).values(
            id=message_id_for(event["id"]),
            workspace_id=event["workspace_id"],
            space_id=event["space_id"],
            seq=event["seq"],
            author_id=event["actor"]["id"],
            kind="system",
            text=text,
            reply_to=None,
            ts=ts_of(event),
        )
    )


APPLY: dict[str, Apply] = {
    "participant.joined": apply_participant_joined,
    "person.updated": apply_person_updated,
    "harness.declared": apply_harness_declared,
    "agent.registered": apply_agent_registered,
    "agent.updated": apply_agent_updated,
    "space.created": apply_space_created,
    "space.updated": apply_space_updated,
    "space.claimed": apply_space_claimed,
    "space.lock_set": apply_space_lock_set,
    "space.lead_set": apply_space_lead_set,
    "lead.handed": draw_line,
    "membership.added": apply_membership_added,
    "membership.removed": apply_membership_removed,
    "membership.replaced": apply_membership_replaced,
    "message.edited": words.apply_message_edited,
    "message.deleted": words.apply_message_deleted,
    "message.heard": words.apply_message_heard,
    "message.pinned": words.apply_message_pinned,
    "message.unpinned": words.apply_message_pinned,
    "message.hidden": words.apply_message_hidden,
    "message.shown": words.apply_message_hidden,
    "feedback": words.apply_feedback,
    "space.erased": erase.apply_space_erased,
}


class Fold:
    """The read models' writes of one transaction, for any number of workspaces.

    Posts are most of the log: they are gathered and written together, in one statement
    with their rooms' counts and the checkpoints (:data:`_FLUSH`), and flushed before any
    other event is applied, so every other ``apply_*`` sees the rows as the log's order
    makes them (docs/adr/0106).
    """

    def __init__(self, conn: AsyncConnection | Conn) -> None:
        # A psycopg connection (docs/adr/0120) folds only posts: see ``posts_only``.
        self.conn = conn
        self.posts: list[EventJson] = []

    async def apply(self, event: EventJson) -> None:
        if event["type"] == "message.post":
            self.posts.append(event)
            return
        apply = APPLY.get(event["type"]) or RUN_APPLY.get(event["type"])
        if apply is not None:
            assert isinstance(self.conn, AsyncConnection), "only posts fold on psycopg"
            await self.flush()
            await apply(self.conn, event)

    async def flush(self, checkpoints: Mapping[str, int] | None = None) -> None:
        """Write the posts gathered, and ``checkpoints`` when given, in one statement."""
        names = sorted(checkpoints or {})
        if not self.posts and not names:
            return
        posts, self.posts = self.posts, []
        rows = [post_row(e) for e in posts]
        params = {
            "posts": orjson.dumps(rows).decode(),
            "checkpoints": orjson.dumps(
                [{"workspace_id": w, "seq": (checkpoints or {})[w]} for w in names]
            ).decode(),
        }
        if isinstance(self.conn, AsyncConnection):
            await self.conn.execute(_FLUSH, params)
        else:
            await self.conn.execute(_FLUSH_DIRECT, params)


def posts_only(events: list[tuple[EventJson, str | None]]) -> bool:
    """Whether folding ``events`` writes nothing but posts (and checkpoints): the events a
    psycopg connection can fold alone (docs/adr/0120)."""
    return all(
        e["type"] == "message.post" or (e["type"] not in APPLY and e["type"] not in RUN_APPLY)
        for e, _ in events
    )


# The posts gathered, each space's count and last seq (a post in a thread brings the
# thread's room forward: docs/product/messages.md), and the checkpoints, in one statement. Applied
# one by one, each post set its space's (and its thread's room's) last seq to its own
# seq, in seq order: the greatest of them is what stands.
def posts_written(only: str = "") -> str:
    """The CTEs that write a batch's posts (``:posts``, JSON) and bring their spaces'
    counts and last seqs forward: ``posts``, ``inserted``, ``touched``, ``spaces``, for a
    statement's WITH. ``only``: a condition on the posts (``p``) written, if any. Shared by
    the locked fold's flush and the unlocked one (``unlocked.py``), which write the same
    rows."""
    return (
        "posts AS (SELECT p.id, p.workspace_id, p.space_id, p.seq, p.author_id, p.kind,"
        " p.text, p.reply_to, p.ts, coalesce(p.card, 'null'::jsonb) AS card, p.run_id"
        " FROM jsonb_to_recordset(CAST(:posts AS jsonb)) AS p(id text, workspace_id text,"
        " space_id text, seq bigint, author_id text, kind text, text text, reply_to text,"
        " ts timestamptz, card jsonb, run_id text)" + (f" WHERE {only}" if only else "") + "),"
        " inserted AS (INSERT INTO rm_messages"
        " (id, workspace_id, space_id, seq, author_id, kind, text, reply_to, ts, card, run_id)"
        " SELECT id, workspace_id, space_id, seq, author_id, kind, text, reply_to, ts, card,"
        " run_id FROM posts ORDER BY seq),"
        " touched AS (SELECT space_id, max(seq) AS seq, count(*) AS n FROM posts"
        " GROUP BY space_id"
        " UNION ALL SELECT s.parent_space_id, max(p.seq), 0 FROM posts p"
        " JOIN rm_spaces s ON s.id = p.space_id AND s.parent_space_id IS NOT NULL"
        " GROUP BY s.parent_space_id),"
        " spaces AS (UPDATE rm_spaces r SET last_seq = t.seq,"
        " message_count = r.message_count + t.n"
        " FROM (SELECT space_id, max(seq) AS seq, sum(n) AS n FROM touched"
        " GROUP BY space_id) AS t WHERE r.id = t.space_id)"
    )


_FLUSH = text(
    "WITH " + posts_written() + " UPDATE projector_checkpoints c SET seq = n.seq"
    " FROM jsonb_to_recordset(CAST(:checkpoints AS jsonb)) AS n(workspace_id text, seq bigint)"
    " WHERE c.workspace_id = n.workspace_id"
)

# Lock the checkpoints of a batch's workspaces (made at 0 when missing; in the order of
# their ids, so two folds never wait on each other in a circle) and read each one's first
# page of events after it, in one statement.
_LOCK_AND_READ = text(
    "WITH wanted AS (SELECT * FROM jsonb_to_recordset(CAST(:wanted AS jsonb))"
    " AS u(w text, upto bigint)),"
    " locked AS ("
    " INSERT INTO projector_checkpoints (workspace_id, seq)"
    " SELECT w, 0 FROM wanted ORDER BY w"
    " ON CONFLICT (workspace_id) DO UPDATE SET seq = projector_checkpoints.seq"
    " RETURNING workspace_id, seq)"
    " SELECT l.workspace_id, l.seq AS checkpoint, e.body, e.traceparent"
    " FROM locked l"
    " JOIN wanted AS u ON u.w = l.workspace_id"
    " LEFT JOIN LATERAL (SELECT body, traceparent, seq FROM events"
    " WHERE workspace_id = l.workspace_id AND seq > l.seq AND seq <= u.upto"
    " ORDER BY seq LIMIT :limit) AS e ON true"
    " ORDER BY l.workspace_id, e.seq"
)
_NO_END = 2**63 - 1
# The two statements of a batch of posts, for a psycopg connection (docs/adr/0120).
_LOCK_AND_READ_DIRECT = compiled(_LOCK_AND_READ)
_FLUSH_DIRECT = compiled(_FLUSH)


class Wanted(TypedDict):
    """The batch read's bind parameters: each workspace and the seq it reads up to (JSON),
    and how many events."""

    wanted: str
    limit: int


def _wanted(upto: Mapping[str, int | None], limit: int) -> Wanted:
    names = sorted(set(upto))
    return {
        "wanted": orjson.dumps(
            [{"w": w, "upto": _NO_END if upto[w] is None else upto[w]} for w in names]
        ).decode(),
        "limit": limit,
    }


async def lock_and_read(
    conn: AsyncConnection | Conn, upto: Mapping[str, int | None], limit: int
) -> tuple[dict[str, int], list[tuple[EventJson, str | None]]]:
    """Lock the workspaces' checkpoints until the transaction ends and read the first page
    (at most ``limit`` events of each, up to its ``upto``, the head when None) after them:
    the checkpoints, and the events in seq order with their traces. ``conn`` is an
    engine's connection, or a psycopg one (docs/adr/0120)."""
    rows: Any
    if isinstance(conn, AsyncConnection):
        rows = await conn.execute(_LOCK_AND_READ, _wanted(upto, limit))
    else:
        rows = await (await conn.execute(_LOCK_AND_READ_DIRECT, _wanted(upto, limit))).fetchall()
    checkpoints: dict[str, int] = {}
    events: list[tuple[EventJson, str | None]] = []
    for row in rows:
        checkpoints.setdefault(row.workspace_id, int(row.checkpoint))
        if row.body is not None:
            events.append((canonical_event(row.body), row.traceparent))
    return checkpoints, events
