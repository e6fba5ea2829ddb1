"""One room: its sheet (who is in it, its title and state) and the lines it shows.

Writes go through the eventlog's door like any event; reads come from the projector's
read models (DESIGN.md §5). Included by ``api/spaces.py``.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query
from pydantic import BaseModel, Field
from sqlalchemy import and_, select

from chips_common.db import tables as t
from chips_common.db.spend_reads import read_job, read_pause
from chips_common.events import canonical
from chips_gateway.agents import shown, shown_in_room
from chips_gateway.api.identity import request_key
from chips_gateway.api.reads import checkpoint, wait_for_checkpoint
from chips_gateway.auth import Principal
from chips_gateway.context import Caller, Ctx, check_write_rate
from chips_gateway.errors import ChipsError
from chips_gateway.files import FileLinks
from chips_gateway.guard import require_member

router = APIRouter()


async def append_event(
    ctx: Ctx, caller: Principal, event: dict[str, Any], key: str | None
) -> dict[str, Any]:
    """Append one event for ``caller`` and answer like an ack, or raise the refusal."""
    idempotency_key = request_key(key)
    await check_write_rate(ctx, caller)
    answer = await ctx.appender.append(
        caller.workspace_id, caller.credential_id, caller.actor, idempotency_key, [event]
    )
    if not answer.ok:
        raise ChipsError(
            answer.code or "invalid_event",
            answer.message or "refused",
            field=answer.field,
            **(answer.data or {}),
        )
    return {
        "idempotency_key": idempotency_key,
        "seq": answer.seqs[-1],
        "duplicate": answer.duplicate,
    }


@router.get("/spaces/{space_id}")
async def room_sheet(
    space_id: str,
    ctx: Ctx,
    caller: Caller,
    after_seq: Annotated[int | None, Query(ge=0)] = None,
) -> dict[str, Any]:
    """The room sheet: title, state, and who is in it with their standing."""
    await require_member(ctx, caller, space_id)
    ws_id = caller.workspace_id
    as_of = (
        await wait_for_checkpoint(ctx, ws_id, after_seq)
        if after_seq is not None
        else await checkpoint(ctx, ws_id)
    )
    s, m, p = t.rm_spaces, t.rm_members, t.rm_participants
    async with ctx.engine.connect() as conn:
        space = (
            (
                await conn.execute(
                    select(s).where(and_(s.c.id == space_id, s.c.workspace_id == ws_id))
                )
            )
            .mappings()
            .first()
        )
        # A thread has no members of its own: its room's are in it (spec/messages.md).
        room = space["parent_space_id"] if space and space["parent_space_id"] else space_id
        members = (
            await conn.execute(
                select(m.c.participant_id, m.c.standing, p.c.name, p.c.kind, p.c.owner_id)
                .select_from(m.outerjoin(p, m.c.participant_id == p.c.id))
                .where(and_(m.c.space_id == room, m.c.standing != "agents"))
                .order_by(m.c.since_seq, m.c.participant_id)
            )
        ).all()
        # A harness with its agents here is shown as them (docs/adr/0070, 0096).
        members = shown_in_room(members)
    if space is None:
        raise ChipsError(
            "not_found", "that space is not in the read models yet; retry with after_seq"
        )
    return await as_seen(
        ctx,
        caller,
        {
            "as_of_seq": as_of,
            **space_fields(space),
            "members": [
                {
                    "participant_id": row.participant_id,
                    "name": row.name,
                    "kind": row.kind,
                    "standing": row.standing,
                    # The room's lead says so (spec/websocket.md, Who leads).
                    **({"lead": True} if row.participant_id == space["lead_id"] else {}),
                }
                for row in members
            ],
        },
    )


async def as_seen(ctx: Ctx, caller: Principal, answer: dict[str, Any]) -> dict[str, Any]:
    """A read as its caller is shown it (``chips_gateway.agents.shown``)."""
    return await shown(ctx.reader, caller, answer)


@router.get("/spaces/{space_id}/messages")
async def room_lines(
    space_id: str,
    ctx: Ctx,
    caller: Caller,
    since: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    after_seq: Annotated[int | None, Query(ge=0)] = None,
    before: Annotated[int | None, Query(ge=1)] = None,
) -> dict[str, Any]:
    """What the room shows, oldest first: messages and the muted ``system`` lines.

    ``since`` reads forward: the oldest ``limit`` lines after it. ``before`` reads back, as
    a room scrolled up does: the newest ``limit`` lines older than it, still oldest first
    (docs/adr/0033).

    A room operation (add, remove, leave, retitle, archive, lock) draws a line of kind
    ``system`` whose ``author_id`` is who did it (docs/adr/0006). Each line reads as it
    does now: the latest words (``edited``), a tombstone once taken back (``deleted``,
    no words), ``pinned``, and the feedback standing under it; a line the caller hid
    for themselves (message.hidden) is left out. A post also has what Chips filled in on
    it: ``attachments`` (each linked for the caller, as the socket links them) and
    ``addressed_to``, so a room read back draws its photos and routes as it did live.
    """
    await require_member(ctx, caller, space_id)
    ws_id = caller.workspace_id
    as_of = (
        await wait_for_checkpoint(ctx, ws_id, after_seq)
        if after_seq is not None
        else await checkpoint(ctx, ws_id)
    )
    msg, hidden, fb = t.rm_messages, t.rm_hidden, t.rm_feedback
    mine_hidden = (
        select(hidden.c.message_id)
        .where(
            and_(hidden.c.participant_id == caller.participant_id, hidden.c.message_id == msg.c.id)
        )
        .exists()
    )
    async with ctx.engine.connect() as conn:
        window = and_(msg.c.space_id == space_id, msg.c.seq > since, ~mine_hidden)
        if before is None:
            query = select(msg).where(window).order_by(msg.c.seq).limit(limit)
        else:
            query = (
                select(msg)
                .where(and_(window, msg.c.seq < before))
                .order_by(msg.c.seq.desc())
                .limit(limit)
            )
        rows = sorted((await conn.execute(query)).mappings(), key=lambda row: int(row["seq"]))
        said = [row["id"] for row in rows]
        feedback: dict[str, list[dict[str, Any]]] = {}
        if said:
            for f in (
                await conn.execute(select(fb).where(fb.c.message_id.in_(said)).order_by(fb.c.seq))
            ).mappings():
                item = {"from": f["from_id"], "kind": f["kind"]}
                item.update({k: f[k] for k in ("emoji", "note", "reasons") if f[k] is not None})
                feedback.setdefault(f["message_id"], []).append(item)
        posted = await _posted_with(
            conn, ws_id, [int(row["seq"]) for row in rows if not row["deleted"]]
        )
        now = time.time()
        lines = [
            {
                "id": row["id"],
                "seq": row["seq"],
                "kind": row["kind"],
                "author_id": row["author_id"],
                "text": row["text"],
                "reply_to": row["reply_to"],
                "ts": row["ts"].isoformat(),
                **({"card": row["card"]} if row["card"] is not None else {}),
                **_filled_in(posted.get(int(row["seq"])), ctx.links, caller.credential_id, now),
                # A harness's reply said on its run (jacobian-channel.md, on the run).
                **({"run_id": row["run_id"]} if row["run_id"] is not None else {}),
                "edited": row["edited"],
                "deleted": row["deleted"],
                "pinned": row["pinned"],
                "feedback": feedback.get(row["id"], []),
                # The agents whose turns heard it while working (message.heard).
                **({"heard_by": row["heard_by"]} if row["heard_by"] else {}),
            }
            for row in rows
        ]
        answer: dict[str, Any] = {"as_of_seq": as_of, "messages": lines}
        if before is not None and caller.kind == "person":
            # What a person's room draws beside its lines, for the same stretch of the log
            # (docs/adr/0100): from the page's oldest line (from the beginning when the page
            # is the room's first) up to where the page ends.
            start = 0 if len(rows) < limit or not rows else int(rows[0]["seq"])
            answer["events"] = await _room_events(
                conn, ws_id, space_id, start, min(before, as_of + 1)
            )
    return await as_seen(ctx, caller, answer)


# The events a person's room draws beside its lines: agents coming and going, asks of a
# harness for an agent, the room paused or let carry on, spend warnings and ceilings, and
# who is working (docs/adr/0100).
DRAWN_BESIDE = (
    "agent.attached",
    "agent.released",
    "agent.fork",
    "agent.asked",
    "exchange.set",
    "budget.warning",
    "space.spend_ceiling_set",
    "room.working",
    "room.idle",
)


async def _room_events(
    conn: Any, workspace_id: str, space_id: str, start: int, end: int
) -> list[dict[str, Any]]:
    """The room's events of the kinds in :data:`DRAWN_BESIDE` with ``start <= seq < end``,
    oldest first: the newest 500 of them, since what stands now matters most."""
    e = t.events.c
    rows = await conn.execute(
        select(e.body)
        .where(
            and_(
                e.workspace_id == workspace_id,
                e.space_id == space_id,
                e.seq >= start,
                e.seq < end,
                e.type.in_(DRAWN_BESIDE),
            )
        )
        .order_by(e.seq.desc())
        .limit(500)
    )
    return [canonical(row.body) for row in reversed(rows.all())]


async def _posted_with(conn: Any, workspace_id: str, seqs: list[int]) -> dict[int, dict[str, Any]]:
    """What Chips filled in on each of these posts: the files it carries, in their order,
    and who it was for (``addressed_to``).

    Read from the logged events, so a line reads back as it was drawn live; a line taken
    back is not asked for (its files go with it).
    """
    if not seqs:
        return {}
    e = t.events.c
    found = await conn.execute(
        select(
            e.seq,
            e.body["attachments"].label("attachments"),
            e.body["addressed_to"].label("addressed_to"),
            e.body["held"].label("held"),
            e.body["held_for"].label("held_for"),
            e.body["held_since"].label("held_since"),
            e.body["exchange"].label("exchange"),
        ).where(and_(e.workspace_id == workspace_id, e.seq.in_(seqs), e.type == "message.post"))
    )
    posted: dict[int, dict[str, Any]] = {}
    for r in found:
        said: dict[str, Any] = {}
        if r.attachments:
            said["attachments"] = list(r.attachments)
        if isinstance(r.addressed_to, list):
            said["addressed_to"] = r.addressed_to
        # What the referee said of it (ADR 0083), and words a free agent said while in no
        # room (ADR 0071), so a held line reads back as it was drawn live.
        if r.held is True:
            said["held"] = True
            if isinstance(r.held_for, list):
                said["held_for"] = r.held_for
        if isinstance(r.exchange, dict):
            said["exchange"] = r.exchange
        if isinstance(r.held_since, str):
            said["held_since"] = r.held_since
        if said:
            posted[int(r.seq)] = said
    return posted


def _filled_in(
    said: dict[str, Any] | None, links: FileLinks, credential_id: str, now: float
) -> dict[str, Any]:
    """A line's files, each linked for the caller, and who it was for."""
    if not said:
        return {}
    out: dict[str, Any] = {}
    if "attachments" in said:
        out["attachments"] = [links.link(a, credential_id, now) for a in said["attachments"]]
    for name in ("addressed_to", "held", "held_for", "held_since", "exchange"):
        if name in said:
            out[name] = said[name]
    return out


class MemberIn(BaseModel):
    participant_id: str = Field(min_length=1, max_length=100)
    standing: Literal["owner", "member", "guest"] = "member"


class SpaceChange(BaseModel):
    title: str | None = Field(default=None, min_length=1, max_length=200)
    state: Literal["open", "closed"] | None = None


@router.post("/spaces/{space_id}/members")
async def add_member(
    space_id: str,
    body: MemberIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: Annotated[str | None, Header()] = None,
) -> dict[str, Any]:
    """The room sheet's Add: ``membership.added``, by the rules at the door."""
    event = {"type": "membership.added", "space_id": space_id, **body.model_dump()}
    return await append_event(ctx, caller, event, idempotency_key)


@router.delete("/spaces/{space_id}/members/{participant_id}")
async def remove_member(
    space_id: str,
    participant_id: str,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: Annotated[str | None, Header()] = None,
) -> dict[str, Any]:
    """The room sheet's Remove, or Leave when it names the caller: ``membership.removed``."""
    event = {"type": "membership.removed", "space_id": space_id, "participant_id": participant_id}
    return await append_event(ctx, caller, event, idempotency_key)


@router.patch("/spaces/{space_id}")
async def change_space(
    space_id: str,
    body: SpaceChange,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: Annotated[str | None, Header()] = None,
) -> dict[str, Any]:
    """Retitle (``title``), archive (``state: "closed"``) or unarchive: ``space.updated``."""
    event = {"type": "space.updated", "space_id": space_id, **body.model_dump(exclude_none=True)}
    return await append_event(ctx, caller, event, idempotency_key)


class LockIn(BaseModel):
    locked: bool


@router.post("/spaces/{space_id}/lock")
async def lock_space(
    space_id: str,
    body: LockIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: Annotated[str | None, Header()] = None,
) -> dict[str, Any]:
    """Lock (or unlock) a room's changes: ``space.lock_set`` (spec/websocket.md)."""
    event = {"type": "space.lock_set", "space_id": space_id, "locked": body.locked}
    return await append_event(ctx, caller, event, idempotency_key)


class SpendCeilingIn(BaseModel):
    # Null (or left out) is the default ceiling; the door checks the range.
    usd: float | None = None


@router.post("/spaces/{space_id}/spend-ceiling")
async def set_spend_ceiling(
    space_id: str,
    body: SpendCeilingIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: Annotated[str | None, Header()] = None,
) -> dict[str, Any]:
    """What the room allows a job: ``space.spend_ceiling_set`` (spec/websocket.md)."""
    event: dict[str, Any] = {"type": "space.spend_ceiling_set", "space_id": space_id}
    if body.usd is not None:
        event["usd"] = body.usd
    return await append_event(ctx, caller, event, idempotency_key)


class LeadIn(BaseModel):
    # Null (or left out): the room has no lead.
    agent_id: str | None = None


@router.post("/spaces/{space_id}/lead")
async def set_lead(
    space_id: str,
    body: LeadIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: Annotated[str | None, Header()] = None,
) -> dict[str, Any]:
    """Choose the room's lead, or none: ``space.lead_set`` (spec/websocket.md, Who leads;
    docs/adr/0090). A person's, and one of the agents in the room."""
    event = {"type": "space.lead_set", "space_id": space_id, "agent_id": body.agent_id}
    return await append_event(ctx, caller, event, idempotency_key)


@router.get("/spaces/{space_id}/spend")
async def room_spend(space_id: str, ctx: Ctx, caller: Caller) -> dict[str, Any]:
    """What the room's job has spent as of now, against its ceiling (docs/adr/0083), and
    whether its agents are paused (``paused``: why, by whom, since which seq; null when
    not), which the people's banner draws (docs/adr/0100)."""
    await require_member(ctx, caller, space_id)
    async with ctx.engine.connect() as conn:
        read = await read_job(conn, caller.workspace_id, space_id)
        paused = await read_pause(conn, caller.workspace_id, space_id)
    return await as_seen(ctx, caller, {**read.facts(), "paused": paused})


@router.delete("/spaces/{space_id}")
async def delete_space(
    space_id: str,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: Annotated[str | None, Header()] = None,
) -> dict[str, Any]:
    """Delete a room: ``space.erased`` (spec/spaces.md, Deleting one; docs/adr/0010).

    A direct space nobody could open again is archived instead; the answer's seq is then
    that of the ``space.updated``.
    """
    event = {"type": "space.erased", "space_id": space_id}
    return await append_event(ctx, caller, event, idempotency_key)


def space_fields(space: Any) -> dict[str, Any]:
    """A space as the HTTP API shows it, from its ``rm_spaces`` row."""
    return {
        "id": space["id"],
        "kind": space["kind"],
        "title": space["title"],
        "state": space["state"],
        "home_of": space["home_of"],
        "key": space["key"],
        "shared": space["key_shared"],
        "locked": space["locked"],
        "created_by": space["created_by"],
        "created_at": space["created_at"].isoformat(),
        "last_seq": space["last_seq"],
        "message_count": space["message_count"],
        "moved_by": space["moved_by"],
        "moved_seq": space["moved_seq"],
        "parent_space_id": space["parent_space_id"],
        "root_message_id": space["root_message_id"],
        "lead_id": space["lead_id"],
    }
