"""What the log says a room or a participant was as of a seq: who was in a room, what
it was told of its lead and who works, which rooms a participant or an agent was in.

Mixed into :class:`~chips_gateway.reader.LogReader`: the scope of a replay and the shaping
of an event read these for the moment of the event, never for now (docs/adr/0141).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.db import tables as t
from chips_common.events.wire import EventJson, canonical_event
from chips_common.rules.agents_view import GIVEN_KEY
from chips_common.rules.handles import Member
from chips_common.rules.room import JOINING, Comebacks, credited
from chips_common.rules.scope import standings_of

# What ends a harness's turn in a room: its words, or its passing.
TURN_ENDS = ("message.post", "turn.passed")
# What says who of a room's agents is working (docs/adr/0090).
WORKING_TOLD = ("room.working", "room.idle")


def room_of(space_id: str) -> Any:
    """The space whose members are in ``space_id``: a thread's room, else itself."""
    parent = select(t.spaces.c.parent_space_id).where(t.spaces.c.id == space_id).scalar_subquery()
    return func.coalesce(parent, space_id)


class HistoryReads:
    """The reads of a room's or a participant's past; ``engine`` is the reader's."""

    engine: AsyncEngine

    async def led_as_of(
        self, workspace_id: str, space_id: str, seq: int
    ) -> tuple[str | None, EventJson | None]:
        """The room's lead once event ``seq`` was logged, and the last room.working or
        room.idle before it (docs/adr/0090). Read through the log's partial index of those
        events, so a room that never had them costs one short look."""
        e = t.events.c
        room = [e.workspace_id == workspace_id, e.space_id == space_id, e.seq <= seq]
        async with self.engine.connect() as conn:
            lead = (
                await conn.execute(
                    select(e.body)
                    .where(and_(*room, e.type == "space.lead_set"))
                    .order_by(e.seq.desc())
                    .limit(1)
                )
            ).scalar()
            told = (
                await conn.execute(
                    select(e.body)
                    .where(and_(*room, e.type.in_(WORKING_TOLD)))
                    .order_by(e.seq.desc())
                    .limit(1)
                )
            ).scalar()
        return (lead or {}).get("agent_id"), told

    async def members_as_of(self, workspace_id: str, space_id: str, seq: int) -> list[Member]:
        """Who was in a space (a thread's room, for a thread) once event ``seq`` was applied,
        each with the standing the event that brought them in gave them, and an agent with
        its harness beside it. Every row: :func:`~chips_common.rules.handles.as_shown` says
        who of them the room shows."""
        log = t.membership_log
        latest = (
            select(log.c.participant_id, log.c.added, log.c.seq)
            .where(
                and_(
                    log.c.workspace_id == workspace_id,
                    log.c.space_id == room_of(space_id),
                    log.c.seq <= seq,
                )
            )
            .order_by(log.c.participant_id, log.c.seq.desc())
            .distinct(log.c.participant_id)
            .subquery()
        )
        p = t.participants.c
        # An agent's harness, beside it (docs/adr/0070).
        behind = t.participants.alias("behind")
        query = (
            select(
                p.id,
                p.kind,
                p.name,
                t.events.c.body,
                behind.c.id.label("harness_id"),
                behind.c.name.label("harness"),
            )
            .select_from(
                latest.join(t.participants, latest.c.participant_id == p.id)
                .outerjoin(
                    t.events,
                    and_(
                        t.events.c.workspace_id == workspace_id,
                        t.events.c.seq == latest.c.seq,
                    ),
                )
                .outerjoin(behind, and_(p.kind == "agent", behind.c.id == p.owner_id))
            )
            .where(latest.c.added.is_(True))
        )
        async with self.engine.connect() as conn:
            rows = await conn.execute(query)
            return [
                Member(
                    r.id,
                    r.kind,
                    r.name,
                    (standings_of(r.body) if r.body else {}).get(r.id, "member"),
                    r.harness_id,
                    r.harness,
                )
                for r in rows
            ]

    async def joinings(
        self,
        workspace_id: str,
        space_id: str,
        since: int,
        before: int,
        owner_of: Callable[[str], str | None] | None = None,
    ) -> list[EventJson]:
        """The events of a space that brought somebody in, with ``since <= seq < before``:
        not an agent's comeback with the room's unarchive; with ``owner_of``, a given
        agent's credited to who brought its harness in (``rules.room.credited``)."""
        e = t.events.c
        query = (
            select(e.body)
            .where(
                and_(
                    e.workspace_id == workspace_id,
                    e.space_id == space_id,
                    e.seq < before,
                    e.type.in_((*JOINING, "agent.released", "membership.removed")),
                )
            )
            .order_by(e.seq)
        )
        async with self.engine.connect() as conn:
            events = [canonical_event(row.body) for row in await conn.execute(query)]
        comebacks = Comebacks()
        found = [ev for ev in events if not comebacks.fold(ev) and ev["type"] in JOINING]
        if owner_of is not None:
            found = credited(found, owner_of)
        return [ev for ev in found if ev["seq"] >= since]

    async def first_said(self, workspace_id: str, space_id: str, before: int) -> int | None:
        """The seq of the first message.post in a space before event ``before``, if any."""
        e = t.events.c
        query = select(func.min(e.seq)).where(
            and_(
                e.workspace_id == workspace_id,
                e.space_id == space_id,
                e.seq < before,
                e.type == "message.post",
            )
        )
        async with self.engine.connect() as conn:
            first = (await conn.execute(query)).scalar()
        return int(first) if first is not None else None

    async def talked_before(self, workspace_id: str, space_id: str, seq: int) -> bool:
        """Whether anything was said in a space before event ``seq``."""
        e = t.events.c
        query = select(e.seq).where(
            and_(
                e.workspace_id == workspace_id,
                e.space_id == space_id,
                e.seq < seq,
                e.type == "message.post",
            )
        )
        async with self.engine.connect() as conn:
            return (await conn.execute(query.limit(1))).first() is not None

    async def spaces_as_of(self, workspace_id: str, participant_id: str, seq: int) -> set[str]:
        """The spaces a participant was in once event ``seq`` had been applied."""
        log = t.membership_log
        query = (
            select(log.c.space_id, log.c.added)
            .where(
                and_(
                    log.c.workspace_id == workspace_id,
                    log.c.participant_id == participant_id,
                    log.c.seq <= seq,
                )
            )
            .order_by(log.c.space_id, log.c.seq.desc())
            .distinct(log.c.space_id)
        )
        async with self.engine.connect() as conn:
            return {row.space_id for row in await conn.execute(query) if row.added}

    async def threads_as_of(self, workspace_id: str, seq: int) -> dict[str, str]:
        """Each thread opened by event ``seq``, with its room (for scoping a replay).

        An erased thread is among them: of what was said in it the log keeps only the
        ``run.cancel`` its room's deletion sent first (rules/stopping.py in the eventlog), which
        a harness catching up from before the deletion is still handed.
        """
        s = t.spaces.c
        query = select(s.id, s.parent_space_id).where(
            and_(s.workspace_id == workspace_id, s.kind == "thread", s.created_seq <= seq)
        )
        async with self.engine.connect() as conn:
            return {row.id: row.parent_space_id for row in await conn.execute(query)}

    async def agent_rooms_as_of(self, workspace_id: str, seq: int) -> dict[str, set[str]]:
        """The rooms each agent of the workspace was in once event ``seq`` was applied."""
        log = t.membership_log
        query = (
            select(log.c.participant_id, log.c.space_id, log.c.added)
            .where(
                and_(
                    log.c.workspace_id == workspace_id,
                    log.c.participant_id.startswith("agt_"),
                    log.c.seq <= seq,
                )
            )
            .order_by(log.c.participant_id, log.c.space_id, log.c.seq.desc())
            .distinct(log.c.participant_id, log.c.space_id)
        )
        found: dict[str, set[str]] = {}
        async with self.engine.connect() as conn:
            for row in await conn.execute(query):
                if row.added:
                    found.setdefault(row.participant_id, set()).add(row.space_id)
        return found

    async def own_agents_as_of(self, harness_id: str, seq: int) -> set[str]:
        """The agents a harness had registered by event ``seq``."""
        p = t.participants.c
        query = select(p.id).where(
            and_(p.owner_id == harness_id, p.kind == "agent", p.joined_seq <= seq)
        )
        async with self.engine.connect() as conn:
            return {row.id for row in await conn.execute(query)}

    async def given_agents_as_of(self, workspace_id: str | None, seq: int) -> dict[str, str]:
        """The agents Chips gave harnesses by event ``seq`` (docs/adr/0154), each with its
        harness."""
        p = t.participants.c
        query = select(p.id, p.owner_id).where(
            and_(
                p.workspace_id == workspace_id,
                p.kind == "agent",
                p.joined_seq <= seq,
                p.agent["key"].astext.startswith(GIVEN_KEY),
            )
        )
        async with self.engine.connect() as conn:
            return {row.id: row.owner_id for row in await conn.execute(query) if row.owner_id}

    async def workspace_of(self, participant_id: str) -> str | None:
        query = select(t.participants.c.workspace_id).where(t.participants.c.id == participant_id)
        async with self.engine.connect() as conn:
            found = (await conn.execute(query)).scalar()
        return str(found) if found else None

    async def speaks_agents_as_of(self, workspace_id: str, harness_id: str, seq: int) -> bool:
        """Whether the harness's last ``harness.declared`` by event ``seq`` named ``agents``."""
        e = t.events.c
        query = (
            select(e.body)
            .where(
                and_(
                    e.workspace_id == workspace_id,
                    e.space_id.is_(None),
                    e.type == "harness.declared",
                    e.seq <= seq,
                    e.body["harness_id"].astext == harness_id,
                )
            )
            .order_by(e.seq.desc())
            .limit(1)
        )
        async with self.engine.connect() as conn:
            body = (await conn.execute(query)).scalar()
        return isinstance(body, dict) and "agents" in (body.get("capabilities") or ())
