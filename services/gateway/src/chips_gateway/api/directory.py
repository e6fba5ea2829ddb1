"""Who is in the workspace (``GET /v1/participants``), and a harness's face: restarting it
and the status it reports (docs/adr/0079, 0080). Included by ``api/spaces.py``.

docs/product/websocket.md, Agents: "Read who is in your rooms from GET /v1/participants, which
lists each agent there and the harness behind it." Restarts: the ``restart`` frame, and
"Restarting" until the harness's next word.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel
from redis.exceptions import RedisError
from sqlalchemy import and_, func, select

from chips_common.db import projector_tables as pt
from chips_common.db import tables as t
from chips_common.rules.exchanges import ExchangeSettings, settings_json
from chips_gateway import rows as typed
from chips_gateway.agents import shown
from chips_gateway.api.reads import wait_for_checkpoint
from chips_gateway.auth import Principal
from chips_gateway.context import Caller, Ctx
from chips_gateway.errors import ChipsError
from chips_gateway.sockets import seen_key

router = APIRouter()


@router.get("/referee", response_model=None)
async def referee(ctx: Ctx, caller: Caller) -> typed.RefereeSettings:
    """The workspace's referee as last set (``workspace.referee_set``): the stop and the
    hold (a count, or ``"never"``) and whether circles count, and the seq that set them
    (null: nobody has, and these are the defaults). Anyone with a token: the settings pages
    of the app draw them, and what a harness is told carries them anyway."""
    e = t.events.c
    async with ctx.engine.connect() as conn:
        row = (
            await conn.execute(
                select(e.seq, e.body)
                .where(
                    and_(
                        e.workspace_id == caller.workspace_id,
                        e.space_id.is_(None),
                        e.type == "workspace.referee_set",
                    )
                )
                .order_by(e.seq.desc())
                .limit(1)
            )
        ).first()
    settings = ExchangeSettings.from_body(row.body if row else None)
    return {**settings_json(settings), "seq": row.seq if row else None}


@router.get("/participants", response_model=None)
async def directory(ctx: Ctx, caller: Caller) -> typed.Directory:
    """The workspace's directory: who is in it, what each harness declared, each agent
    with the harness behind it, its room and its face (``face``: one emoji, or a picture's
    attachment id with ``face_url`` signed for the caller), and what each harness's face
    reads.

    A person of the workspace who is not a guest is told who everybody is; a guest, only
    who shares a room with them; a harness, every person and harness, its own agents and
    the agents it shares a room with. A harness that has not declared ``agents`` is shown
    the pre-agents view: its own agents are itself, others' are harnesses (ADR 0079).

    Read from the read models once they hold everything logged before this call, so a
    participant added a moment ago is listed.
    """
    ws_id = caller.workspace_id
    as_of = await wait_for_checkpoint(ctx, ws_id, await ctx.reader.head(ws_id))
    p, m = pt.rm_participants, t.memberships
    async with ctx.engine.connect() as conn:
        rows = (
            (
                await conn.execute(
                    select(p).where(p.c.workspace_id == ws_id).order_by(p.c.joined_seq, p.c.id)
                )
            )
            .mappings()
            .all()
        )
        # Rooms now, from the door state, as every read decides membership (guard.py).
        rooms = (
            await conn.execute(
                select(m.c.space_id, m.c.participant_id).where(m.c.workspace_id == ws_id)
            )
        ).all()
        # How many of each free agent's words wait (the door's held_words), never the words:
        # those are its harness's alone (docs/product/websocket.md, A message is said in a room).
        h = t.held_words.c
        waiting = {
            row.agent_id: int(row.n)
            for row in await conn.execute(
                select(h.agent_id, func.jsonb_array_length(h.words).label("n")).where(
                    h.workspace_id == ws_id
                )
            )
        }
    rooms_of: dict[str, set[str]] = {}
    for room in rooms:
        rooms_of.setdefault(room.participant_id, set()).add(room.space_id)
    names = {row["id"]: row["name"] for row in rows}
    listed = [row for row in rows if shown_to(caller, row, rooms_of)]
    now = time.time()
    people = [entry(row, names, rooms_of, waiting) for row in listed]
    for row, person in zip(listed, people, strict=True):
        if row["kind"] == "agent":  # its face, a picture's URL signed for the caller
            face = (row["agent"] or {}).get("face")
            typed.put_face(person, ctx.links.face(face, caller.credential_id, now))
    await add_faces(ctx, people)
    await add_last_seen(ctx, people)
    answer: typed.Directory = {"as_of_seq": as_of, "participants": people}
    return await shown(ctx.reader, caller, answer)


def shown_to(caller: Principal, row: Any, rooms_of: dict[str, set[str]]) -> bool:
    """Whether ``caller`` is told of the participant ``row`` (docs/product/websocket.md, Agents)."""
    pid = row["id"]
    mine = rooms_of.get(caller.participant_id, set())
    if pid == caller.participant_id:
        return True
    if caller.kind == "person":
        return caller.role != "guest" or bool(rooms_of.get(pid, set()) & mine)
    if row["kind"] != "agent":
        return True
    return row["owner_id"] == caller.participant_id or bool(rooms_of.get(pid, set()) & mine)


def entry(
    row: Any, names: dict[str, str], rooms_of: dict[str, set[str]], waiting: dict[str, int]
) -> typed.Participant:
    found: typed.Participant = {
        "participant_id": row["id"],
        "kind": row["kind"],
        "name": row["name"],
        "role": row["role"],
        "owner_id": row["owner_id"],
        "capabilities": row["capabilities"],
    }
    if row["kind"] == "person" and row.get("active") is False:
        found["active"] = False  # deactivated by an owner or admin (docs/adr/0125)
    if row["kind"] == "agent":
        facts = row["agent"] or {}
        room = sorted(rooms_of.get(row["id"], set()))
        found["harness_id"] = row["owner_id"]
        found["harness"] = names.get(row["owner_id"])
        found["key"] = facts.get("key")
        found["state"] = facts.get("state", "active")
        found["main"] = bool(facts.get("main"))
        found["space_id"] = room[0] if room else None
        found["held"] = waiting.get(row["id"], 0)
        if facts.get("name_by"):
            found["name_by"] = facts["name_by"]
    return found


async def add_faces(ctx: Ctx, people: list[typed.Participant]) -> None:
    """Each harness's ``status`` (connected, disconnected, restarting, trouble), and each
    agent's, its harness's. Left out when Redis does not answer (a soft dependency)."""
    harnesses = [p["participant_id"] for p in people if p["kind"] == "harness"]
    harnesses += [p["harness_id"] for p in people if p["kind"] == "agent" and "harness_id" in p]
    faces = await ctx.restarts.faces(sorted(set(harnesses)))
    for person in people:
        harness_id = person["participant_id"] if person["kind"] == "harness" else None
        harness_id = person.get("harness_id", harness_id)
        face = faces.get(harness_id) if harness_id else None
        if face is not None:
            person["status"] = face.status
            if face.restart_asked_at is not None:
                person["restart_asked_at"] = face.restart_asked_at


async def add_last_seen(ctx: Ctx, people: list[typed.Participant]) -> None:
    """Each harness's ``last_seen_at``: when it last subscribed, or null for never.

    Read from Redis (a soft dependency): without it, the field is left out.
    """
    harnesses = [p for p in people if p["kind"] == "harness"]
    if not harnesses:
        return
    keys = [seen_key(ctx.settings.redis_prefix, p["participant_id"]) for p in harnesses]
    try:
        seen = await ctx.redis.mget(keys)
    except Exception:
        return
    for person, at in zip(harnesses, seen, strict=True):
        person["last_seen_at"] = at.decode() if isinstance(at, bytes) else at


async def harness_row(ctx: Ctx, caller: Principal, harness_id: str) -> Any:
    q = t.participants.c
    async with ctx.engine.connect() as conn:
        row = (
            await conn.execute(
                select(q.id, q.name, q.owner_id, q.capabilities).where(
                    and_(
                        q.id == harness_id,
                        q.workspace_id == caller.workspace_id,
                        q.kind == "harness",
                    )
                )
            )
        ).first()
    if row is None:
        raise ChipsError("not_found", "no such harness in this workspace", field="harness_id")
    return row


@router.post("/harnesses/{harness_id}/restart", status_code=202, response_model=None)
async def restart(harness_id: str, ctx: Ctx, caller: Caller) -> typed.RestartAsked:
    """Restart a harness that declared ``restarts``: the ``restart`` frame down each of its
    sockets that accepts one, on every gateway; it reads "Restarting" until its next word.

    Its owner, or an owner or admin of the workspace, asks. Refused (409 ``not_connected``)
    when nothing of it that accepts a restart is connected: there is nobody to ask.
    """
    harness = await harness_row(ctx, caller, harness_id)
    if caller.kind != "person" or (
        caller.participant_id != harness.owner_id and caller.role not in ("owner", "admin")
    ):
        raise ChipsError(
            "forbidden",
            "only the harness's owner, or an owner or admin of the workspace, restarts it",
        )
    if "restarts" not in (harness.capabilities or ()):
        raise ChipsError(
            "invalid_request",
            f"{harness.name} has not declared restarts: Chips cannot restart it",
            field="harness_id",
        )
    asked_at = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    try:
        sockets = await ctx.restarts.ask(harness_id, caller.participant_id, asked_at)
    except (RedisError, OSError):
        raise ChipsError(
            "unavailable", "who is connected cannot be read right now; try again shortly"
        ) from None
    if sockets == 0:
        raise ChipsError(
            "not_connected",
            f"nothing of {harness.name} that takes a restart is connected, so it can't be asked",
            harness_id=harness_id,
        )
    return {
        "harness_id": harness_id,
        "asked_by": caller.participant_id,
        "asked_at": asked_at,
        "sockets": sockets,
        "status": "restarting",
    }


class StatusIn(BaseModel):
    status: Literal["ok", "trouble"]


@router.put("/harnesses/{harness_id}/status", response_model=None)
async def report_status(
    harness_id: str, body: StatusIn, ctx: Ctx, caller: Caller
) -> typed.HarnessStatus:
    """The harness says how it came back (a bridge, of what is behind it): its next word
    after a restart, so it no longer reads "Restarting"."""
    if caller.kind != "harness" or caller.participant_id != harness_id:
        raise ChipsError("forbidden", "a harness reports its own status, with its own token")
    try:
        await ctx.restarts.report(harness_id, body.status)
        face = (await ctx.restarts.faces([harness_id])).get(harness_id)
    except (RedisError, OSError):
        raise ChipsError(
            "unavailable", "the status cannot be kept right now; try again shortly"
        ) from None
    return {"harness_id": harness_id, "status": face.status if face else body.status}
