"""What the gateway shows of agents, and to whom (docs/adr/0070, 0079).

The scope and the pre-agents view are pure (``chips_common.rules.scope`` and
``rules.agents_view``); this module reads what they start from: a socket's or an HTTP
read's view as of a seq, and, for reads of the present, a harness's agents now.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from sqlalchemy import and_, select

from chips_common.db import tables as t
from chips_common.events import JsonObject
from chips_common.events.wire import DeliveredJson
from chips_common.rules.agents_view import as_seen_by, stand_ins
from chips_common.rules.scope import MembershipView
from chips_gateway.auth import Principal
from chips_gateway.frames import HelloAgent
from chips_gateway.reader import LogReader

Translate = Callable[[JsonObject], JsonObject | None]
EventTranslate = Callable[[DeliveredJson], DeliveredJson | None]
# A read's answer, typed (``chips_gateway.rows``) or not: shown as the same type.
Answer = TypeVar("Answer", bound=Mapping[str, object])


async def view_as_of(reader: LogReader, principal: Principal, seq: int) -> MembershipView:
    """The scope of ``principal`` once event ``seq`` was applied, to fold on from there."""
    ws, pid = principal.workspace_id, principal.participant_id
    own: set[str] = set()
    given: dict[str, str] = {}
    speaks = False
    if principal.kind == "harness":
        own = await reader.own_agents_as_of(pid, seq)
        speaks = await reader.speaks_agents_as_of(ws, pid, seq)
        given = await reader.given_agents_as_of(ws, seq)
    return MembershipView(
        pid,
        await reader.spaces_as_of(ws, pid, seq),
        await reader.threads_as_of(ws, seq),
        kind=principal.kind,
        role=principal.role,
        agent_rooms=await reader.agent_rooms_as_of(ws, seq),
        own_agents=own,
        speaks_agents=speaks,
        given_agents=given,
    )


async def speaks_agents(reader: LogReader, harness_id: str) -> bool:
    """Whether a harness has declared ``agents`` (as of now)."""
    return "agents" in await reader.capabilities(harness_id)


async def present_view(reader: LogReader, principal: Principal) -> Translate | None:
    """For a read of the present: the pre-agents view of a harness that has not declared
    ``agents``, as a function over each event or answer; None for anybody else."""
    return await present_view_of(reader, principal.kind, principal.participant_id)


async def present_view_of(reader: LogReader, kind: str, participant_id: str) -> Translate | None:
    """:func:`present_view` for a caller known by its kind and id alone (a search's)."""
    if kind != "harness" or await speaks_agents(reader, participant_id):
        return None
    shown = await stand_ins_now(reader, participant_id)
    names = await names_shown(reader, shown)
    return lambda event: as_seen_by(event, participant_id, shown, names=names)


async def stand_ins_now(reader: LogReader, harness_id: str) -> dict[str, str]:
    """The agents a harness before agents is shown as somebody else, as of now: its own
    as itself, others' given agents as their harness (docs/adr/0154)."""
    own = await reader.own_agents_as_of(harness_id, 2**62)
    workspace_id = await reader.workspace_of(harness_id)
    given = await reader.given_agents_as_of(workspace_id, 2**62) if workspace_id else {}
    return stand_ins(harness_id, own, given)


async def names_shown(reader: LogReader, shown: dict[str, str]) -> dict[str, str]:
    """The name of each participant an agent is shown as, as of now (docs/adr/0154)."""
    found = await reader.participants(sorted(set(shown.values())))
    return {pid: row["name"] for pid, row in found.items()}


async def present_event_view(reader: LogReader, principal: Principal) -> EventTranslate | None:
    """:func:`present_view` over events, which stay events."""
    pid = principal.participant_id
    if principal.kind != "harness" or await speaks_agents(reader, pid):
        return None
    shown = await stand_ins_now(reader, pid)
    names = await names_shown(reader, shown)
    return lambda event: as_seen_by(event, pid, shown, names=names)


async def shown(reader: LogReader, principal: Principal, answer: Answer) -> Answer:
    """A read's answer as its caller is shown it: a harness that has not declared
    ``agents`` is shown the view from before agents (docs/adr/0079), its own agents as
    itself, on every read route (``tests/e2e/test_agents_view_reads.py`` holds each to it).
    The view renames ids and leaves the shape as it was, so the answer keeps its type."""
    translate = await present_view(reader, principal)
    if translate is None:
        return answer
    # The view walks any JSON; it hands back the answer's own shape (see above).
    return cast(Answer, translate(cast(JsonObject, dict(answer))) or answer)


def shown_in_room(rows: Sequence[Any]) -> list[Any]:
    """A room's member rows (each with ``participant_id``, ``kind`` and ``owner_id``) as the
    room shows them: a harness with any of its agents there is shown as those agents, a
    member itself or not, as ``chips_common.rules.handles.as_shown`` says for the room
    note and addressing (docs/adr/0070, 0096)."""
    behind = {r.owner_id for r in rows if r.kind == "agent" and r.owner_id}
    return [r for r in rows if not (r.kind == "harness" and r.participant_id in behind)]


async def agents_with_rooms(reader: LogReader, harness_id: str) -> list[HelloAgent]:
    """A harness's agents with their rooms, for its hello (docs/product/websocket.md, Saying you
    speak agents): ``{id, name, key, space_id, main, state}``, in the order registered."""
    p, m = t.participants.c, t.memberships.c
    query = (
        select(p.id, p.name, p.agent, m.space_id)
        .select_from(t.participants.outerjoin(t.memberships, m.participant_id == p.id))
        .where(and_(p.owner_id == harness_id, p.kind == "agent"))
        .order_by(p.joined_seq, p.id)
    )
    async with reader.engine.connect() as conn:
        rows = (await conn.execute(query)).all()
    found: dict[str, HelloAgent] = {}
    for row in rows:
        if row.id in found:  # in one room at a time; the door's state says so
            continue
        facts = row.agent or {}
        found[row.id] = {
            "id": row.id,
            "name": row.name,
            "key": facts.get("key"),
            "space_id": row.space_id,
            "main": bool(facts.get("main")),
            "state": facts.get("state", "active"),
        }
        if facts.get("face"):
            found[row.id]["face"] = facts["face"]
    return list(found.values())
