"""What waits for the caller: the inbox, read marks, muted rooms, preferences and push
subscriptions (docs/notifications.md, docs/adr/0132).

Notifications are people's: a harness is refused. The list is newest first; ``needs_me``
is what is not done and asks something of the caller (an approval, a question) or is
not read yet; ``after_seq`` waits a bounded while for the notifier to fold the log that
far, as a search does.
"""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool
from pydantic.config import JsonDict

from chips_common.rules.notifications import (
    MAX_EMAIL_DELAY,
    Notification,
    PrefsJson,
    PrefsProblem,
    parse_prefs,
)
from chips_gateway.auth import Principal
from chips_gateway.context import Caller, Context, Ctx, check_write_rate
from chips_gateway.errors import ChipsError
from chips_gateway.guard import require_member
from chips_gateway.notifications import Inbox, InboxPage

router = APIRouter(prefix="/v1")

NOTIFICATION_ID = r"^ntf_[A-Za-z0-9]{1,60}$"
HHMM = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"


class Inboxed(BaseModel):
    notifications: list[Notification]
    unread: int
    needs_me: int
    as_of_seq: int


class ReadIds(BaseModel):
    """These notifications of mine are read."""

    model_config = ConfigDict(extra="forbid")

    ids: list[Annotated[str, Field(pattern=NOTIFICATION_ID)]] = Field(max_length=500)


class ReadAll(BaseModel):
    """Every notification of mine is read."""

    model_config = ConfigDict(extra="forbid")

    all: Literal[True]


class Unread(BaseModel):
    unread: int


class Muted(BaseModel):
    space_id: str
    muted: bool


class MuteBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    muted: StrictBool


class QuietHours(BaseModel):
    start: str = Field(pattern=HHMM)
    end: str = Field(pattern=HHMM)


class Preferences(BaseModel):
    email: Literal["off", "immediate", "delayed", "digest"]
    email_delay_seconds: int
    push: bool
    quiet_hours: QuietHours | None
    email_address: str | None
    time_zone: str


def number_not_text(value: Any) -> Any:
    """JSON's number (6380.0 is the whole number 6380), never a string or a boolean."""
    if isinstance(value, str | bool):
        raise ValueError("is a number of seconds")
    return value


Seconds = Annotated[int, Field(ge=0, le=MAX_EMAIL_DELAY), BeforeValidator(number_not_text)]

# Left out is "keep"; null is no value of these, refused as a malformed request (and the
# document says so). null clears the quiet hours and the address (email then goes nowhere).
NOT_NULL = ("email", "email_delay_seconds", "push", "time_zone")


def not_null(schema: JsonDict) -> None:
    """The schema of PreferencesChange without null where null is refused."""
    properties: dict[str, Any] = schema["properties"]  # type: ignore[assignment]
    for name in NOT_NULL:
        prop = properties[name]
        (kind,) = [kind for kind in prop.pop("anyOf") if kind != {"type": "null"}]
        prop.update(kind)


class PreferencesChange(BaseModel):
    """Any of the preferences; those left out keep their value."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=not_null)

    email: Literal["off", "immediate", "delayed", "digest"] | None = None
    email_delay_seconds: Seconds | None = None
    push: StrictBool | None = None
    quiet_hours: QuietHours | None = None
    email_address: str | None = Field(default=None, max_length=254, pattern=r"^[^@\s]+@[^@\s]+$")
    time_zone: str | None = Field(default=None, min_length=1, max_length=100)


class VapidKey(BaseModel):
    public_key: str


class PushKeys(BaseModel):
    p256dh: str = Field(min_length=16, max_length=200, pattern=r"^[A-Za-z0-9_\-=]+$")
    auth: str = Field(min_length=8, max_length=100, pattern=r"^[A-Za-z0-9_\-=]+$")


# A push service's URL: https (plain http outside production, for tests).
ENDPOINT = r"^https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?(/\S*)?$"


class Subscription(BaseModel):
    endpoint: str = Field(min_length=8, max_length=2000, pattern=ENDPOINT)
    keys: PushKeys


class Unsubscription(BaseModel):
    endpoint: str = Field(min_length=8, max_length=2000)


class Unsubscribed(BaseModel):
    deleted: bool


def inbox_of(request: Request) -> Inbox:
    inbox: Inbox = request.app.state.inbox
    return inbox


def person(caller: Principal) -> None:
    if caller.kind != "person":
        raise ChipsError("forbidden", "notifications are people's; a harness has none")


async def wait_folded(ctx: Context, inbox: Inbox, workspace_id: str, seq: int) -> int:
    """Wait (a bounded while) for the notifier to fold the log up to ``seq``; the seq
    it has reached."""
    deadline = time.monotonic() + ctx.settings.read_your_writes_timeout_seconds
    polls = 0
    while True:
        folded = await inbox.folded(workspace_id)
        if folded >= seq or time.monotonic() >= deadline:
            return folded
        if polls % 4 == 0:  # the notifier asks for events at its pace: asked now (ADR 0168)
            await ctx.nudge("notifier", workspace_id, seq)
        polls += 1
        await asyncio.sleep(0.05)


@router.get("/notifications", response_model=Inboxed)
async def list_notifications(
    ctx: Ctx,
    caller: Caller,
    request: Request,
    filter: Annotated[Literal["needs_me", "all"], Query()] = "needs_me",
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    before: Annotated[str | None, Query(pattern=NOTIFICATION_ID)] = None,
    after_seq: Annotated[int | None, Query(ge=0, lt=2**63)] = None,
) -> InboxPage:
    person(caller)
    inbox = inbox_of(request)
    ws, me = caller.workspace_id, caller.participant_id
    as_of = (
        await wait_folded(ctx, inbox, ws, after_seq)
        if after_seq is not None
        else await inbox.folded(ws)
    )
    rows = await inbox.page(ws, me, filter, limit, before)
    unread, needs_me = await inbox.counts(ws, me)
    return {"notifications": rows, "unread": unread, "needs_me": needs_me, "as_of_seq": as_of}


@router.post("/notifications/read", response_model=Unread)
async def mark_read(
    ctx: Ctx, caller: Caller, request: Request, body: ReadIds | ReadAll
) -> dict[str, int]:
    person(caller)
    await check_write_rate(ctx, caller)
    inbox = inbox_of(request)
    ws, me = caller.workspace_id, caller.participant_id
    await inbox.mark_read(ws, me, body.ids if isinstance(body, ReadIds) else None)
    unread, _ = await inbox.counts(ws, me)
    return {"unread": unread}


@router.get("/spaces/{space_id}/notifications", response_model=Muted)
async def get_muted(ctx: Ctx, caller: Caller, request: Request, space_id: str) -> Muted:
    person(caller)
    await require_member(ctx, caller, space_id)
    muted = await inbox_of(request).muted(caller.workspace_id, caller.participant_id, space_id)
    return Muted(space_id=space_id, muted=muted)


@router.put("/spaces/{space_id}/notifications", response_model=Muted)
async def put_muted(
    ctx: Ctx, caller: Caller, request: Request, space_id: str, body: MuteBody
) -> Muted:
    person(caller)
    await require_member(ctx, caller, space_id)
    await check_write_rate(ctx, caller)
    inbox = inbox_of(request)
    await inbox.set_muted(caller.workspace_id, caller.participant_id, space_id, body.muted)
    return Muted(space_id=space_id, muted=body.muted)


@router.get("/notification-preferences", response_model=Preferences)
async def get_preferences(ctx: Ctx, caller: Caller, request: Request) -> PrefsJson:
    person(caller)
    prefs = await inbox_of(request).prefs(caller.workspace_id, caller.participant_id)
    return prefs.answer(ctx.settings.notify_email_delay_seconds)


@router.put("/notification-preferences", response_model=Preferences)
async def put_preferences(
    ctx: Ctx, caller: Caller, request: Request, change: PreferencesChange
) -> PrefsJson:
    """Set any of the preferences; those left out keep their value."""
    person(caller)
    body = change.model_dump(exclude_unset=True)
    for name in ("email", "email_delay_seconds", "push", "time_zone"):
        if name in body and body[name] is None:
            raise ChipsError("invalid_request", f"{name} cannot be null", field=name)
    inbox = inbox_of(request)
    ws, me = caller.workspace_id, caller.participant_id
    try:
        prefs = parse_prefs(body, await inbox.prefs(ws, me))
    except PrefsProblem as problem:
        # Well formed, and still none we can take (a time zone no one has heard of).
        raise ChipsError("invalid_preference", str(problem), field=problem.field) from None
    await check_write_rate(ctx, caller)
    await inbox.save_prefs(ws, me, prefs)
    return prefs.answer(ctx.settings.notify_email_delay_seconds)


@router.get("/push/vapid-public-key", response_model=VapidKey)
async def vapid_public_key(caller: Caller, request: Request) -> dict[str, str]:
    key = await inbox_of(request).vapid_public_key()
    if key is None:
        raise ChipsError("unavailable", "the notifier has not made its push keys yet")
    return {"public_key": key}


def check_endpoint(ctx: Context, endpoint: str) -> None:
    """A push service's https URL; plain http only outside production (a test's own)."""
    parts = urlsplit(endpoint)
    plain = parts.scheme == "http" and ctx.settings.env != "production"
    if not parts.hostname or not (parts.scheme == "https" or plain):
        raise ChipsError(
            "invalid_request",
            "endpoint is the https URL the browser subscribed with",
            field="endpoint",
        )


@router.post("/push/subscriptions", status_code=201, response_model=Subscription)
async def subscribe(ctx: Ctx, caller: Caller, request: Request, body: Subscription) -> Subscription:
    person(caller)
    check_endpoint(ctx, body.endpoint)
    await check_write_rate(ctx, caller)
    await inbox_of(request).subscribe(
        caller.workspace_id, caller.participant_id, body.endpoint, body.keys.p256dh, body.keys.auth
    )
    return body


@router.delete("/push/subscriptions", response_model=Unsubscribed)
async def unsubscribe(
    ctx: Ctx, caller: Caller, request: Request, body: Unsubscription
) -> dict[str, bool]:
    person(caller)
    await check_write_rate(ctx, caller)
    deleted = await inbox_of(request).unsubscribe(
        caller.workspace_id, caller.participant_id, body.endpoint
    )
    return {"deleted": deleted > 0}
