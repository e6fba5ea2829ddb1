"""People: an owner or admin changes a person's role or deactivates them, and a person
says their own name and time zone (docs/adr/0125).

How a person signs in is in the modules beside this one: ``invites`` (an invite link, and a
pairing code for a further device), ``devices`` (a device's sessions, the devices listed and
revoked, a device of one's own paired), ``api_keys`` (a key for a script) and ``passkeys``.
They share what is here: who may act on them (``need_person``, ``ADMINS``) and how the door's
refusal is answered (``refusal``).

Every act that changes who may sign in is an event decided at the door; a refusal here
or there is answered with a code and a sentence and logged as nothing. The secrets (an
invite's, an API key's) are shown once, in the answer, and kept only as hashes.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field
from sqlalchemy import and_, select

from chips_common.append import AppendAnswer
from chips_common.db import projector_tables as pt
from chips_common.events import JsonObject
from chips_common.events.people import known_time_zone
from chips_common.events.wire import EventJson, event_json
from chips_gateway.answers.people import Me, MeChanged, PersonChanged
from chips_gateway.api.identity import request_key
from chips_gateway.api.reads import wait_for_checkpoint
from chips_gateway.auth import Principal
from chips_gateway.context import Caller, Context, Ctx, IdempotencyKey, check_write_rate
from chips_gateway.errors import ChipsError
from chips_gateway.sockets import DEACTIVATED_WHY

router = APIRouter(prefix="/v1")

Name = Annotated[str, Field(min_length=1, max_length=80)]
ADMINS = ("owner", "admin")


class PersonChange(BaseModel):
    role: Literal["admin", "member", "guest"] | None = None
    active: bool | None = None
    # Deactivating somebody who owns group rooms: the active person who takes them over.
    rooms_to: str | None = Field(default=None, min_length=1, max_length=100)
    # One's own only (the door refuses another's): PATCH /v1/me says the same.
    name: str | None = Field(default=None, min_length=1, max_length=80)
    time_zone: str | None = Field(default=None, min_length=1, max_length=64)


class ProfileIn(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=80)
    time_zone: str | None = Field(default=None, min_length=1, max_length=64)


def refusal(answer: AppendAnswer) -> None:
    if not answer.ok:
        raise ChipsError(
            answer.code or "invalid_event", answer.message or "refused", field=answer.field
        )


def need_person(caller: Principal) -> None:
    if caller.kind != "person":
        raise ChipsError("forbidden", "only a person has devices and invites")


@router.patch("/people/{participant_id}")
async def change_person(
    participant_id: str,
    body: PersonChange,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> PersonChanged:
    """An owner or admin changes a person's role, or deactivates (every device, key and
    harness of theirs signed out, their sockets closed, the group rooms they own handed to
    ``rooms_to``) or reactivates them."""
    need_person(caller)
    await check_write_rate(ctx, caller)
    event: JsonObject = {"type": "person.updated", "participant_id": participant_id}
    event.update(body.model_dump(exclude_none=True))
    answer = await ctx.appender.append(
        caller.workspace_id,
        caller.credential_id,
        caller.actor,
        request_key(idempotency_key),
        [event],
    )
    refusal(answer)
    # The person.updated, then any membership.added of the heir's to a room it was not in.
    logged: EventJson | None = next(
        (event_json(e) for e in answer.events if e.get("type") == "person.updated"), None
    )
    disconnected = logged.get("disconnected", []) if logged is not None else []
    if body.active is False:
        await ctx.sockets.notify(participant_id, DEACTIVATED_WHY)
        for harness_id in disconnected:
            await ctx.sockets.notify(str(harness_id), DEACTIVATED_WHY)
    return PersonChanged(
        participant_id=participant_id,
        disconnected=disconnected,
        rooms_handed=logged.get("rooms_handed", []) if logged is not None else [],
        rooms_to=logged.get("rooms_to") if logged is not None else None,
        seq=answer.seqs[-1],
    )


async def profile(ctx: Context, caller: Principal) -> Me:
    # From the read model once it holds everything logged before this call, so a change
    # made a moment ago is read back.
    await wait_for_checkpoint(ctx, caller.workspace_id, await ctx.reader.head(caller.workspace_id))
    p = pt.rm_participants.c
    async with ctx.engine.connect() as conn:
        row = (
            await conn.execute(
                select(p.name, p.role, p.time_zone).where(
                    and_(p.id == caller.participant_id, p.workspace_id == caller.workspace_id)
                )
            )
        ).first()
    return Me(
        participant_id=caller.participant_id,
        workspace_id=caller.workspace_id,
        kind=caller.kind,
        name=row.name if row is not None else caller.name,
        role=caller.role,
        time_zone=row.time_zone if row is not None else None,
    )


@router.get("/me")
async def get_me(ctx: Ctx, caller: Caller) -> Me:
    """Who the caller is: their name, role and time zone (none until they say one)."""
    return await profile(ctx, caller)


@router.patch("/me")
async def change_me(
    body: ProfileIn,
    ctx: Ctx,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> MeChanged:
    """A person renames themselves or sets their time zone (an IANA name): one
    ``person.updated``, which says the name it replaces."""
    need_person(caller)
    await check_write_rate(ctx, caller)
    change = body.model_dump(exclude_none=True)
    if not change:
        raise ChipsError("invalid_event", "say a new name or a time zone", field="name")
    if body.name is not None and not body.name.strip():
        raise ChipsError("invalid_event", "a name has a letter at least", field="name")
    if body.time_zone is not None and not known_time_zone(body.time_zone):
        raise ChipsError(
            "invalid_event",
            f"{body.time_zone!r} is not a time zone's IANA name (like Europe/Lisbon)",
            field="time_zone",
        )
    answer = await ctx.appender.append(
        caller.workspace_id,
        caller.credential_id,
        caller.actor,
        request_key(idempotency_key),
        [{"type": "person.updated", "participant_id": caller.participant_id, **change}],
    )
    refusal(answer)
    logged: EventJson | None = event_json(answer.events[-1]) if answer.events else None
    return MeChanged(
        participant_id=caller.participant_id,
        name=logged.get("name") if logged is not None else None,
        previous_name=logged.get("previous_name") if logged is not None else None,
        time_zone=logged.get("time_zone") if logged is not None else None,
        seq=answer.seqs[-1],
    )
