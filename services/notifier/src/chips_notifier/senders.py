"""The senders: email and Web Push of the notifications that fall due (docs/adr/0132).

Each channel has a state on the notification's row. A sender takes due rows ``FOR
UPDATE SKIP LOCKED`` (replicas share the work), decides with the person's preferences
(``decide_email``, ``decide_push``: pure), and commits its claim before it sends: state
``sending`` with the claim's time in ``*_due_at``, which is the claim's token. Every later
write of the row names that token, so a claimer that was given up on writes nothing.

Email goes in two steps (``mail.py``): everything but DATA's final dot, then a commit of
``final``, then the dot, then ``sent``. A claim found ``sending`` long after it was made
died before the dot: nothing was delivered, and it is sent again. One found ``final``
died in the instant between the dot and the answer's commit: ``unsure``, never sent
again. A push goes the same way, its point of no return the request body's last byte
(``push.py``).

A failure the other side answers (SMTP down, 4xx, a push service's 429 or 5xx) puts the
row back to ``pending`` with a backoff; after ``MAX_TRIES`` it is ``failed``. Each
message is sent in a thread, with a timeout: a server that is down blocks nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import and_, exists, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_common.db import tables as t
from chips_common.db.direct import Conn, Direct
from chips_common.db.notifier_tables import (
    notification_mutes,
    notification_prefs,
    notification_reads,
    notifications,
    push_gone,
    push_subscriptions,
)
from chips_common.rules.notifications import (
    Prefs,
    email_due,
    listed,
    parse_prefs,
    quiet_until,
    shown_when_muted,
)
from chips_notifier import mail
from chips_notifier.push import PushPayload, Target

log = logging.getLogger(__name__)

_n = notifications.c
BATCH = 50
MAX_TRIES = 8
BACKOFF_FIRST = 5.0
BACKOFF_MAX = 600.0


def backoff(tries: int) -> float:
    """Seconds before the next try after ``tries`` failed ones: 5, 10, 20, … 600."""
    return float(min(BACKOFF_FIRST * 2.0 ** max(tries - 1, 0), BACKOFF_MAX))


@dataclass(frozen=True)
class Facts:
    """What a decision needs of one notification and its person."""

    kind: str
    sole: bool
    created_at: datetime
    read: bool
    done: bool
    muted: bool
    prefs: Prefs


def decide_email(
    facts: Facts, now: datetime, default_delay: float, stale: float
) -> tuple[str, datetime | None]:
    """``("skip", None)``, ``("wait", due)`` or ``("send", None)``."""
    if facts.read or facts.done or (facts.muted and not shown_when_muted(facts.kind, facts.sole)):
        return "skip", None
    if facts.created_at < now - timedelta(seconds=stale):
        return "skip", None
    due = email_due(facts.prefs, facts.created_at, default_delay)
    if due is None:
        return "skip", None
    return ("wait", due) if due > now else ("send", None)


def decide_push(facts: Facts, now: datetime, stale: float, subscribed: bool) -> str:
    """``skip`` or ``send``: pushed at once, unless read, done, muted, quiet or stale."""
    if not subscribed or not facts.prefs.push or facts.read or facts.done:
        return "skip"
    if facts.muted and not shown_when_muted(facts.kind, facts.sole):
        return "skip"
    if facts.created_at < now - timedelta(seconds=stale) or quiet_until(facts.prefs, now):
        return "skip"
    return "send"


def link(base: str, row: Any) -> str:
    return f"{base}/#/room/{row.space_id}/at/{row.seq}"


def payload(base: str, row: Any) -> PushPayload:
    """A push's JSON: the notification as the API lists it, and the app's link."""
    return {**listed(row), "url": link(base, row)}


class People:
    """Each person's preferences, mutes, address and subscriptions, read once a tick."""

    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn
        self.prefs: dict[tuple[str, str], Prefs] = {}
        self.mutes: dict[tuple[str, str], set[str]] = {}

    async def of(self, workspace_id: str, participant_id: str) -> tuple[Prefs, set[str]]:
        at = (workspace_id, participant_id)
        if at not in self.prefs:
            p, m = notification_prefs.c, notification_mutes.c
            body = (
                await self.conn.execute(
                    select(p.body).where(
                        and_(p.workspace_id == workspace_id, p.participant_id == participant_id)
                    )
                )
            ).scalar()
            prefs = parse_prefs(body) if body else Prefs()
            if prefs.email_address is None:
                i = t.invites.c
                invited = (
                    await self.conn.execute(
                        select(i.email)
                        .where(
                            and_(
                                i.workspace_id == workspace_id,
                                i.used_by == participant_id,
                                i.email.is_not(None),
                            )
                        )
                        .order_by(i.created_at.desc())
                        .limit(1)
                    )
                ).scalar()
                if invited:
                    prefs = Prefs(**{**prefs.__dict__, "email_address": invited})
            self.prefs[at] = prefs
            rows = await self.conn.execute(
                select(m.space_id).where(
                    and_(m.workspace_id == workspace_id, m.participant_id == participant_id)
                )
            )
            self.mutes[at] = {row.space_id for row in rows}
        return self.prefs[at], self.mutes[at]

    async def targets(self, workspace_id: str, participant_id: str) -> list[Target]:
        s, g = push_subscriptions.c, push_gone.c
        # Not one its push service said is no more, unless subscribed again since.
        gone = exists().where(
            and_(
                g.workspace_id == s.workspace_id,
                g.participant_id == s.participant_id,
                g.endpoint == s.endpoint,
                g.gone_at >= s.created_at,
            )
        )
        rows = await self.conn.execute(
            select(s.endpoint, s.p256dh, s.auth).where(
                and_(s.workspace_id == workspace_id, s.participant_id == participant_id, ~gone)
            )
        )
        return [Target(row.endpoint, row.p256dh, row.auth) for row in rows]


async def read_ids(conn: AsyncConnection, ids: Sequence[str]) -> set[str]:
    r = notification_reads.c
    rows = await conn.execute(select(r.notification_id).where(r.notification_id.in_(list(ids))))
    return {row.notification_id for row in rows}


async def facts_of(people: People, row: Any, read: set[str]) -> tuple[Facts, set[str]]:
    prefs, muted = await people.of(row.workspace_id, row.participant_id)
    facts = Facts(
        row.kind,
        bool(row.sole),
        row.created_at,
        row.id in read,
        row.done_at is not None,
        row.room_id in muted,
        prefs,
    )
    return facts, muted


class Channel:
    """The columns of one channel: ``email`` or ``push``."""

    def __init__(self, name: str) -> None:
        self.state = _n[f"{name}_state"]
        self.due = _n[f"{name}_due_at"]
        self.tries = _n[f"{name}_tries"]
        self.name = name
        # When this process last looked for a dead sender's claims (``give_up_stale``).
        self.looked_at: datetime | None = None

    async def any_due(self, direct: Direct | None, now: datetime) -> bool:
        """Whether a row may be due (``due_rows`` finds one, or one another sender holds):
        one autocommit statement on psycopg itself, so an idle tick costs no transaction
        and no SQLAlchemy (docs/adr/0166). Without ``direct``, True: ``claim`` looks."""
        if direct is None:
            return True
        query = (
            f"SELECT EXISTS(SELECT 1 FROM notifications WHERE {self.name}_state = 'pending'"
            f" AND {self.name}_due_at <= %(now)s) AS due"
        )

        async def one(conn: Conn) -> bool:
            row = await (await conn.execute(query, {"now": now})).fetchone()
            return bool(row is not None and row.due)

        return await direct.run(one)

    def due_rows(self, now: datetime) -> Any:
        return (
            select(notifications)
            .where(and_(self.state == "pending", self.due <= now))
            .order_by(self.due)
            .limit(BATCH)
            .with_for_update(skip_locked=True)
        )

    async def move(
        self,
        engine: AsyncEngine,
        ids: Sequence[str],
        token: datetime,
        from_state: str,
        to_state: str,
        due: datetime | None = None,
    ) -> int:
        """Move the claimed rows on, if the claim still holds."""
        values: dict[str, object] = {f"{self.name}_state": to_state}  # the row's columns
        if due is not None:
            values[f"{self.name}_due_at"] = due
        async with engine.begin() as conn:
            done = await conn.execute(
                update(notifications)
                .where(and_(_n.id.in_(list(ids)), self.state == from_state, self.due == token))
                .values(**values)
            )
            return int(done.rowcount or 0)

    async def give_up_stale(
        self, engine: AsyncEngine, now: datetime, after: float, resend: bool
    ) -> None:
        """Claims older than ``after`` seconds: their claimer died or hung. Looked for
        no more often than ``stale_look_due`` says (two statements a tick otherwise)."""
        if not stale_look_due(self.looked_at, now, after):
            return
        self.looked_at = now
        old = now - timedelta(seconds=after)
        async with engine.begin() as conn:
            # Died before the point of no return: nothing was delivered, send again.
            again = await conn.execute(
                update(notifications)
                .where(and_(self.state == "sending", self.due < old))
                .values(**{f"{self.name}_state": "pending" if resend else "unsure"})
            )
            # Died between the point of no return and the answer: maybe sent; never again.
            unsure = await conn.execute(
                update(notifications)
                .where(and_(self.state == "final", self.due < old))
                .values(**{f"{self.name}_state": "unsure"})
            )
        if again.rowcount or unsure.rowcount:
            log.warning(
                "%s: %d claims of a dead sender sent again, %d left unsure",
                self.name,
                again.rowcount or 0,
                unsure.rowcount or 0,
            )


def stale_look_due(last: datetime | None, now: datetime, after: float) -> bool:
    """Whether to look for claims gone stale now. A claim is stale only ``after`` seconds
    after it was made, so looking every quarter of that finds each within 1.25 ``after``
    (not ``after`` and a tick), and costs nothing on most ticks."""
    return last is None or now - last >= timedelta(seconds=after / 4) or now < last


async def failed(
    channel: Channel, engine: AsyncEngine, ids: list[str], token: datetime, tries: int
) -> None:
    """A try the other side answered with a failure: again later, or given up."""
    if tries >= MAX_TRIES:
        await channel.move(engine, ids, token, "sending", "failed")
    else:
        later = datetime.now(UTC) + timedelta(seconds=backoff(tries))
        await channel.move(engine, ids, token, "sending", "pending", due=later)


async def run_every(
    every: float, stop: asyncio.Event, tick: Callable[[], Awaitable[object]], name: str
) -> None:
    while not stop.is_set():
        try:
            await tick()
        except Exception:
            log.exception("the notifier's %s sender failed; it runs again in %.1fs", name, every)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)


Claimed = list[tuple[Any, Facts]]


async def claim(
    engine: AsyncEngine,
    channel: Channel,
    decide: Callable[[Any, Facts, People], Awaitable[tuple[str, datetime | None]]],
    direct: Direct | None = None,
) -> tuple[datetime, Claimed]:
    """Take the due rows, skip or put off what is not to be sent, and claim the rest."""
    token = datetime.now(UTC)
    claimed: Claimed = []
    if not await channel.any_due(direct, token):
        return token, []
    async with engine.begin() as conn:
        rows = (await conn.execute(channel.due_rows(token))).all()
        if not rows:
            return token, []
        people = People(conn)
        read = await read_ids(conn, [row.id for row in rows])
        for row in rows:
            facts, _ = await facts_of(people, row, read)
            verdict, due = await decide(row, facts, people)
            if verdict == "skip":
                values: dict[str, object] = {f"{channel.name}_state": "skipped"}
            elif verdict == "wait":
                values = {f"{channel.name}_due_at": due}
            else:
                values = {
                    f"{channel.name}_state": "sending",
                    f"{channel.name}_due_at": token,
                    f"{channel.name}_tries": channel.tries + 1,
                }
                claimed.append((row, facts))
            await conn.execute(update(notifications).where(_n.id == row.id).values(**values))
    return token, claimed


def mails_of(
    base: str, claimed: Claimed, default_delay: float
) -> list[tuple[mail.Mail, list[Any]]]:
    """One email per notification; one per person for those who take a daily digest."""
    digests: dict[tuple[str, str], list[Any]] = {}
    found: list[tuple[mail.Mail, list[Any]]] = []
    for row, facts in claimed:
        address = facts.prefs.email_address or ""
        if facts.prefs.email == "digest":
            digests.setdefault((row.workspace_id, row.participant_id), []).append((row, address))
            continue
        text = (
            f"{row.title}\n\n{row.body}\n\nOpen it in Chips: {link(base, row)}\n\n"
            "You are told by email of what you did not read in Chips in time. Change this "
            "in your notification preferences."
        )
        found.append((mail.Mail(address, row.title, text, row.id), [row]))
    for pairs in digests.values():
        rows = [row for row, _ in pairs]
        lines = [f"- {row.title}: {row.body}\n  {link(base, row)}" for row in rows]
        subject = f"{len(rows)} thing{'s' if len(rows) > 1 else ''} waiting for you in Chips"
        text = "\n".join(["What waits for you in Chips:", "", *lines, ""])
        found.append((mail.Mail(pairs[0][1], subject, text, f"{rows[0].id}d"), rows))
    return found
