"""How a person is told (docs/adr/0132): their preferences, quiet hours, when an email
falls due, and which notifications a muted room still shows.

Pure: the gateway checks and answers preferences with it, the notifier's senders decide
with it when to mail and whether to push. A notification's one listed shape is here too:
the inbox lists it, the socket's frame carries it, and a push sends it with a link.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from typing_extensions import TypedDict

from chips_common.clock import iso

EMAIL_MODES = ("off", "immediate", "delayed", "digest")
DEFAULT_EMAIL_DELAY = 600
MAX_EMAIL_DELAY = 7 * 24 * 3600
# When a daily digest is mailed, in the person's time zone.
DIGEST_AT = time(9, 0)
ASKING = frozenset({"approval", "question"})
HHMM = re.compile(r"^([01][0-9]|2[0-3]):([0-5][0-9])$")


Kind = Literal["approval", "question", "handoff", "mention", "budget", "direct"]


class Notification(TypedDict):
    """A notification as the inbox lists it, the socket's frame carries it and a push
    sends it: one shape for the three."""

    id: str
    kind: Kind
    space_id: str
    space_name: str
    seq: int
    ref_id: str | None
    title: str
    body: str
    created_at: str
    read_at: str | None
    done_at: str | None
    done_reason: str | None


def listed(row: Any, read_at: datetime | None = None) -> Notification:
    """A ``notifications`` row as it is listed; ``read_at`` from the person's reads,
    which the row does not hold (none for a notification just made)."""
    return {
        "id": row.id,
        "kind": row.kind,
        "space_id": row.space_id,
        "space_name": row.space_name,
        "seq": int(row.seq),
        "ref_id": row.ref_id,
        "title": row.title,
        "body": row.body,
        "created_at": iso(row.created_at),
        "read_at": iso(read_at) if read_at else None,
        "done_at": iso(row.done_at) if row.done_at else None,
        "done_reason": row.done_reason,
    }


class PrefsProblem(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class QuietHours(TypedDict):
    start: str
    end: str


class PrefsJson(TypedDict):
    """A person's preferences as they are shown, and kept."""

    email: str
    email_delay_seconds: int
    push: bool
    quiet_hours: QuietHours | None
    email_address: str | None
    time_zone: str


@dataclass(frozen=True)
class Prefs:
    email: str = "delayed"
    email_delay_seconds: int | None = None  # None: the installation's default
    push: bool = True
    quiet_start: str | None = None  # "22:00"
    quiet_end: str | None = None  # "07:00"
    email_address: str | None = None
    time_zone: str = "UTC"

    def delay(self, default: float) -> float:
        return float(self.email_delay_seconds if self.email_delay_seconds is not None else default)

    def answer(self, default_delay: float) -> PrefsJson:
        quiet: QuietHours | None = (
            {"start": self.quiet_start, "end": self.quiet_end}
            if self.quiet_start and self.quiet_end
            else None
        )
        return {
            "email": self.email,
            "email_delay_seconds": int(self.delay(default_delay)),
            "push": self.push,
            "quiet_hours": quiet,
            "email_address": self.email_address,
            "time_zone": self.time_zone,
        }


def parse_prefs(body: Any, base: Prefs | None = None) -> Prefs:
    """Preferences from a stored or sent JSON object; fields left out keep ``base``'s.
    Raises PrefsProblem naming the field that is wrong."""
    if not isinstance(body, dict):
        raise PrefsProblem("body", "preferences are a JSON object")
    prefs = base or Prefs()
    known = {"email", "email_delay_seconds", "push", "quiet_hours", "email_address", "time_zone"}
    for key in body:
        if key not in known:
            raise PrefsProblem(key, f"{key} is not a notification preference")
    email = body.get("email", prefs.email)
    if email not in EMAIL_MODES:
        raise PrefsProblem("email", "email is one of off, immediate, delayed, digest")
    delay = body.get("email_delay_seconds", prefs.email_delay_seconds)
    if delay is not None and (
        not isinstance(delay, int) or isinstance(delay, bool) or not 0 <= delay <= MAX_EMAIL_DELAY
    ):
        raise PrefsProblem("email_delay_seconds", "email_delay_seconds is 0 to 604800 seconds")
    push = body.get("push", prefs.push)
    if not isinstance(push, bool):
        raise PrefsProblem("push", "push is true or false")
    start, end = prefs.quiet_start, prefs.quiet_end
    if "quiet_hours" in body:
        quiet = body["quiet_hours"]
        if quiet is None:
            start = end = None
        elif isinstance(quiet, dict) and set(quiet) == {"start", "end"}:
            start, end = quiet["start"], quiet["end"]
            for name, value in (("start", start), ("end", end)):
                if not isinstance(value, str) or not HHMM.match(value):
                    raise PrefsProblem(f"quiet_hours.{name}", f"quiet_hours.{name} is HH:MM")
        else:
            raise PrefsProblem("quiet_hours", 'quiet_hours is {"start": "HH:MM", "end": "HH:MM"}')
    address = body.get("email_address", prefs.email_address)
    if address is not None and (
        not isinstance(address, str) or len(address) > 254 or "@" not in address[1:-1]
    ):
        raise PrefsProblem("email_address", "email_address is an address like ada@example.com")
    zone = body.get("time_zone", prefs.time_zone)
    if not isinstance(zone, str) or zone_of(zone) is None:
        raise PrefsProblem("time_zone", "time_zone is an IANA time zone like Europe/Paris")
    return Prefs(email, delay, push, start, end, address or None, zone)


def zone_of(name: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _clock(hhmm: str) -> time:
    hours, minutes = hhmm.split(":")
    return time(int(hours), int(minutes))


def quiet_until(prefs: Prefs, now: datetime) -> datetime | None:
    """The end of the quiet hours ``now`` is in (an aware datetime), or None when it is
    not in them. Quiet hours may run over midnight (22:00 to 07:00)."""
    if not prefs.quiet_start or not prefs.quiet_end:
        return None
    zone = zone_of(prefs.time_zone) or ZoneInfo("UTC")
    local = now.astimezone(zone)
    start, end = _clock(prefs.quiet_start), _clock(prefs.quiet_end)
    at = local.time().replace(second=0, microsecond=0, tzinfo=None)
    if start == end:
        return None
    inside = start <= at < end if start < end else (at >= start or at < end)
    if not inside:
        return None
    day = local.date() if (start < end or at < end) else local.date() + timedelta(days=1)
    return datetime.combine(day, end, tzinfo=zone)


def email_due(prefs: Prefs, created_at: datetime, default_delay: float) -> datetime | None:
    """When a notification made at ``created_at`` is mailed if still unread and not done
    (None: never). Quiet hours put it off to their end."""
    if prefs.email == "off" or not prefs.email_address:
        return None
    if prefs.email == "immediate":
        due = created_at
    elif prefs.email == "delayed":
        due = created_at + timedelta(seconds=prefs.delay(default_delay))
    else:
        zone = zone_of(prefs.time_zone) or ZoneInfo("UTC")
        local = created_at.astimezone(zone)
        due = datetime.combine(local.date(), DIGEST_AT, tzinfo=zone)
        if due <= local:
            due += timedelta(days=1)
    later = quiet_until(prefs, due)
    return later if later is not None else due


def shown_when_muted(kind: str, sole: bool) -> bool:
    """A muted room still notifies of approvals and questions only this person answers."""
    return kind in ASKING and sole


def needs_me(kind: str, read: bool, done: bool) -> bool:
    """Not done, and asking something of the person (an approval, a question), or not
    yet read."""
    return not done and (kind in ASKING or not read)
