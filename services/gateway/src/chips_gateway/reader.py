"""Read-only access to the log and the door state, for replay, scope and heads."""

from __future__ import annotations

from collections.abc import AsyncIterator

from sqlalchemy import and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.db import tables as t
from chips_common.events.wire import EventJson, HeardJson, canonical_event
from chips_common.rules.delivery import RUN_ENDS
from chips_common.service.fold import events_traced
from chips_gateway.history import TURN_ENDS, WORKING_TOLD, HistoryReads, room_of

__all__ = ["TURN_ENDS", "WORKING_TOLD", "LogReader", "room_of"]


class LogReader(HistoryReads):
    """Read-only access to the log and the door state; the past of rooms and participants
    is :class:`~chips_gateway.history.HistoryReads`'."""

    def __init__(self, engine: AsyncEngine, batch_size: int = 500) -> None:
        self.engine = engine
        self.batch_size = batch_size

    async def head(self, workspace_id: str) -> int:
        async with self.engine.connect() as conn:
            head = (
                await conn.execute(
                    select(t.workspaces.c.head_seq).where(t.workspaces.c.id == workspace_id)
                )
            ).scalar()
        return int(head or 0)

    async def events_between(
        self, workspace_id: str, after: int, upto: int | None
    ) -> list[EventJson]:
        """Events with ``after < seq <= upto`` (no upper bound when ``upto`` is None), in order."""
        return [event for event, _ in await self.events_traced(workspace_id, after, upto)]

    async def events_traced(
        self, workspace_id: str, after: int, upto: int | None
    ) -> list[tuple[EventJson, str | None]]:
        """Like :meth:`events_between`, each with the trace context it was appended under:
        the read every consumer of the log makes from its checkpoint (the library's)."""
        async with self.engine.connect() as conn:
            return await events_traced(conn, workspace_id, after, upto, self.batch_size)

    async def context_start(
        self, workspace_id: str, space_id: str, participant_id: str, before: int
    ) -> int:
        """The seq a harness's context starts after (docs/product/websocket.md, What you're told).

        Its joining (not an agent's comeback with the room's unarchive: docs/adr/0154),
        or where the turn that said its last words here began: the first
        message for it after its words before those, so what was said while that turn
        worked is handed over (a message for it it did not answer is handed again: lines
        may repeat, never leave a gap). With no such message, its last words.
        """
        e = t.events.c
        said = [e.workspace_id == workspace_id, e.space_id == space_id]
        own = and_(*said, e.actor_id == participant_id, e.type.in_(TURN_ENDS))
        spoke_q = select(func.max(e.seq)).where(and_(own, e.seq < before)).scalar_subquery()
        log, prior = t.membership_log.alias("log"), t.membership_log.alias("prior")
        room = room_of(space_id)
        # Its last move in the room before an add: a comeback with the room's unarchive
        # when that was its removal right after the archive released it (rules.room.Comebacks).
        last_move = (
            select(func.max(prior.c.seq))
            .where(
                and_(
                    prior.c.workspace_id == workspace_id,
                    prior.c.space_id == room,
                    prior.c.participant_id == participant_id,
                    prior.c.seq < log.c.seq,
                )
            )
            .scalar_subquery()
        )
        released = t.events.alias("released")
        comeback = (
            select(released.c.seq)
            .where(
                and_(
                    released.c.workspace_id == workspace_id,
                    released.c.seq == last_move - 1,
                    released.c.type == "agent.released",
                    released.c.body["agent_id"].astext == participant_id,
                    released.c.body["reason"].astext == "archived",
                )
            )
            .exists()
        )
        joined_q = (
            select(func.max(log.c.seq))
            .where(
                and_(
                    log.c.workspace_id == workspace_id,
                    # In a thread, since joining its room (docs/product/messages.md, Threads).
                    log.c.space_id == room,
                    log.c.participant_id == participant_id,
                    log.c.added.is_(True),
                    log.c.seq < before,
                    ~comeback,
                )
            )
            .scalar_subquery()
        )
        async with self.engine.connect() as conn:
            row = (await conn.execute(select(spoke_q, joined_q))).first()
            spoke = int((row[0] if row else 0) or 0)
            joined = int((row[1] if row else 0) or 0)
            if spoke <= joined:
                return joined
            earlier = select(func.max(e.seq)).where(and_(own, e.seq < spoke)).scalar_subquery()
            for_it = or_(
                ~e.body.has_key("addressed_to"), e.body["addressed_to"].has_key(participant_id)
            )
            began = (
                await conn.execute(
                    select(func.min(e.seq)).where(
                        and_(
                            *said,
                            e.type == "message.post",
                            e.actor_id != participant_id,
                            e.seq < spoke,
                            e.seq > func.coalesce(earlier, 0),
                            e.seq > joined,
                            for_it,
                        )
                    )
                )
            ).scalar()
        return int(began) if began else spoke

    async def heard(
        self, workspace_id: str, space_id: str, after: int, attachment_ids: list[str]
    ) -> dict[str, HeardJson]:
        """What was heard in these voice notes so far, by attachment (docs/adr/0137): the
        ``attachment.transcribed`` logged after the post (``after``) in its room."""
        e = t.events.c
        query = select(e.body).where(
            and_(
                e.workspace_id == workspace_id,
                e.space_id == space_id,
                e.seq > after,
                e.type == "attachment.transcribed",
                e.body["attachment_id"].astext.in_(sorted(attachment_ids)),
            )
        )
        async with self.engine.connect() as conn:
            found = await conn.execute(query)
            return {b["attachment_id"]: heard_of(b) for (b,) in found}

    async def event_by_id(self, workspace_id: str, event_id: str) -> EventJson | None:
        """One event of the workspace by its id, or None."""
        e = t.events.c
        async with self.engine.connect() as conn:
            body = (
                await conn.execute(
                    select(e.body).where(and_(e.workspace_id == workspace_id, e.id == event_id))
                )
            ).scalar()
        return canonical_event(body) if body is not None else None

    async def space_window(
        self, workspace_id: str, space_id: str, after: int, before: int, limit: int
    ) -> list[EventJson]:
        """The newest ``limit`` events of a space with ``after < seq < before``, oldest first."""
        query = (
            select(t.events.c.body)
            .where(
                and_(
                    t.events.c.workspace_id == workspace_id,
                    t.events.c.space_id == space_id,
                    t.events.c.seq > after,
                    t.events.c.seq < before,
                )
            )
            .order_by(t.events.c.seq.desc())
            .limit(limit)
        )
        async with self.engine.connect() as conn:
            rows = [canonical_event(row.body) for row in await conn.execute(query)]
        rows.reverse()
        return rows

    async def workspace_participants(self, workspace_id: str) -> dict[str, dict[str, str]]:
        query = select(t.participants.c.id, t.participants.c.kind, t.participants.c.name).where(
            t.participants.c.workspace_id == workspace_id
        )
        async with self.engine.connect() as conn:
            return {
                r.id: {"id": r.id, "kind": r.kind, "name": r.name}
                for r in await conn.execute(query)
            }

    async def agent_owners(self, workspace_id: str) -> dict[str, str]:
        """Each agent of the workspace with its harness (which never changes)."""
        p = t.participants.c
        query = select(p.id, p.owner_id).where(
            and_(p.workspace_id == workspace_id, p.kind == "agent", p.owner_id.is_not(None))
        )
        async with self.engine.connect() as conn:
            return {r.id: r.owner_id for r in await conn.execute(query)}

    async def working_turns(
        self, workspace_id: str, harness_id: str, seq: int
    ) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
        """The runs a harness's agents had going once event ``seq`` was applied (its
        agents', and its own as itself, its own one agent where it is a member itself):
        each run's id with its room and its agent, in the order they started; and when each was
        last heard from (the ts of the newest event in its room naming it)."""
        e = t.events.c
        ends = t.events.alias("ends")
        ended = (
            select(ends.c.seq)
            .where(
                and_(
                    ends.c.workspace_id == workspace_id,
                    ends.c.space_id == e.space_id,
                    ends.c.type.in_(RUN_ENDS),
                    ends.c.seq <= seq,
                    ends.c.body["run_id"].astext == e.body["run_id"].astext,
                )
            )
            .exists()
        )
        query = (
            select(e.body["run_id"].astext, e.space_id, e.actor_id)
            .where(
                and_(
                    e.workspace_id == workspace_id,
                    e.type == "run.started",
                    e.seq <= seq,
                    or_(
                        and_(
                            e.body["actor"]["kind"].astext == "agent",
                            e.body["actor"]["harness_id"].astext == harness_id,
                        ),
                        e.actor_id == harness_id,
                    ),
                    ~ended,
                )
            )
            .order_by(e.seq)
        )
        async with self.engine.connect() as conn:
            runs = {row[0]: (row[1], row[2]) for row in await conn.execute(query)}
            heard: dict[str, str] = {}
            for run_id, (space_id, _) in runs.items():
                last = (
                    await conn.execute(
                        select(e.body["ts"].astext)
                        .where(
                            and_(
                                e.workspace_id == workspace_id,
                                e.space_id == space_id,
                                e.seq <= seq,
                                e.body["run_id"].astext == run_id,
                            )
                        )
                        .order_by(e.seq.desc())
                        .limit(1)
                    )
                ).scalar()
                if last:
                    heard[run_id] = str(last)
        return runs, heard

    async def participants(self, ids: list[str]) -> dict[str, dict[str, str]]:
        if not ids:
            return {}
        query = select(t.participants.c.id, t.participants.c.kind, t.participants.c.name).where(
            t.participants.c.id.in_(ids)
        )
        async with self.engine.connect() as conn:
            return {
                r.id: {"id": r.id, "kind": r.kind, "name": r.name}
                for r in await conn.execute(query)
            }

    async def replay(
        self, workspace_id: str, after: int, upto: int
    ) -> AsyncIterator[list[EventJson]]:
        """Batches of up to ``batch_size`` events with ``after < seq <= upto``."""
        cursor = after
        while cursor < upto:
            batch = await self.events_between(workspace_id, cursor, upto)
            if not batch:
                return
            yield batch
            cursor = batch[-1]["seq"]

    async def space_events(
        self, workspace_id: str, space_id: str, after: int, limit: int
    ) -> list[EventJson]:
        query = (
            select(t.events.c.body)
            .where(
                and_(
                    t.events.c.workspace_id == workspace_id,
                    t.events.c.space_id == space_id,
                    t.events.c.seq > after,
                )
            )
            .order_by(t.events.c.seq)
            .limit(limit)
        )
        async with self.engine.connect() as conn:
            return [canonical_event(row.body) for row in await conn.execute(query)]

    async def parent_of(self, space_id: str) -> str | None:
        """A thread's room, or None for a space that is not a thread."""
        query = select(t.spaces.c.parent_space_id).where(t.spaces.c.id == space_id)
        async with self.engine.connect() as conn:
            parent = (await conn.execute(query)).scalar()
        return str(parent) if parent else None

    async def capabilities(self, participant_id: str) -> list[str]:
        """What a harness declared it does (harness.declared), sorted."""
        query = select(t.participants.c.capabilities).where(t.participants.c.id == participant_id)
        async with self.engine.connect() as conn:
            found = (await conn.execute(query)).scalar()
        return list(found or [])

    async def autonomy(self, participant_id: str) -> str | None:
        """A harness's autonomy: "off", the dial's level, or None when none was recorded."""
        query = select(t.participants.c.autonomy).where(t.participants.c.id == participant_id)
        async with self.engine.connect() as conn:
            found = (await conn.execute(query)).scalar()
        return None if found is None else str(found)

    async def current_spaces(self, workspace_id: str, participant_id: str) -> list[str]:
        query = (
            select(t.memberships.c.space_id)
            .where(
                and_(
                    t.memberships.c.workspace_id == workspace_id,
                    t.memberships.c.participant_id == participant_id,
                )
            )
            .order_by(t.memberships.c.since_seq)
        )
        async with self.engine.connect() as conn:
            return [row.space_id for row in await conn.execute(query)]

    async def is_member(self, space_id: str, participant_id: str) -> bool:
        """Whether the participant is in the space now (in a thread's room, for a thread)."""
        query = select(t.memberships.c.standing).where(
            and_(
                t.memberships.c.space_id == room_of(space_id),
                t.memberships.c.participant_id == participant_id,
            )
        )
        async with self.engine.connect() as conn:
            return (await conn.execute(query)).first() is not None


def heard_of(transcribed: EventJson) -> HeardJson:
    """What an ``attachment.transcribed`` says was heard, as a voice note carries it."""
    heard: HeardJson = {"outcome": transcribed["outcome"]}
    if "transcript" in transcribed:
        heard["transcript"] = transcribed["transcript"]
    if "note" in transcribed:
        heard["note"] = transcribed["note"]
    if "engine" in transcribed:
        heard["engine"] = transcribed["engine"]
    return heard
