"""The email and push senders' ticks: claim what falls due, send it, mark it
(``senders.py`` says how a claim makes sure nothing is sent twice)."""

from __future__ import annotations

import asyncio
import http.client
import logging
import smtplib
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.db.direct import Direct
from chips_common.db.notifier_tables import push_gone
from chips_common.rules.notifications import ASKING
from chips_notifier import mail
from chips_notifier.config import NotifierSettings
from chips_notifier.push import Pusher, Staged, Target, Unusable
from chips_notifier.senders import (
    MAX_TRIES,
    Channel,
    Facts,
    People,
    backoff,
    claim,
    decide_email,
    decide_push,
    failed,
    mails_of,
    payload,
)

log = logging.getLogger(__name__)


class EmailSender:
    def __init__(
        self,
        engine: AsyncEngine,
        settings: NotifierSettings,
        smtp: mail.Smtp,
        direct: Direct | None = None,
    ) -> None:
        self.engine = engine
        self.direct = direct
        self.settings = settings
        self.smtp = smtp
        self.channel = Channel("email")
        # A claim older than this was made by a sender that died or hung.
        self.stale_claim = smtp.timeout * 3 + 5

    async def tick(self) -> int:
        """Send what falls due now; how many emails were sent."""
        now = datetime.now(UTC)
        await self.channel.give_up_stale(self.engine, now, self.stale_claim, resend=True)
        settings = self.settings

        async def decide(row: Any, facts: Facts, _: People) -> tuple[str, datetime | None]:
            return decide_email(
                facts, now, settings.notify_email_delay_seconds, settings.notify_stale_seconds
            )

        token, claimed = await claim(self.engine, self.channel, decide, self.direct)
        if not claimed:
            return 0
        found = mails_of(settings.app_url(), claimed, settings.notify_email_delay_seconds)
        sent = await asyncio.gather(*(self.send(m, rows, token) for m, rows in found))
        return sum(sent)

    async def send(self, message: mail.Mail, rows: list[Any], token: datetime) -> int:
        ids = [row.id for row in rows]
        tries = int(rows[0].email_tries) + 1
        move = self.channel.move
        try:
            client = await asyncio.to_thread(mail.stage, self.smtp, message)
        except mail.Permanent as refused:
            log.warning("an email was refused for good (%s): %s", ids[0], refused)
            await move(self.engine, ids, token, "sending", "failed")
            return 0
        except (OSError, smtplib.SMTPException) as down:
            log.warning("SMTP failed (try %d of %s): %s", tries, ids[0], down)
            await failed(self.channel, self.engine, ids, token, tries)
            return 0
        # The point of no return is the final dot: marked before it is sent.
        if await move(self.engine, ids, token, "sending", "final") != len(ids):
            await asyncio.to_thread(mail.abandon, client)
            return 0
        try:
            await asyncio.to_thread(mail.finish, client)
        except mail.Permanent as refused:
            log.warning("an email was refused for good (%s): %s", ids[0], refused)
            await move(self.engine, ids, token, "final", "failed")
            return 0
        except smtplib.SMTPResponseException as refused:
            # The server answered that it did not take it: nothing was delivered.
            log.warning("SMTP refused (try %d of %s): %s", tries, ids[0], refused)
            later = datetime.now(UTC) + timedelta(seconds=backoff(tries))
            await move(self.engine, ids, token, "final", "pending", due=later)
            return 0
        except (OSError, smtplib.SMTPException) as lost:
            log.warning("no answer to an email's end (%s), so it may have gone: %s", ids[0], lost)
            await move(self.engine, ids, token, "final", "unsure")
            return 0
        await move(self.engine, ids, token, "final", "sent")
        await asyncio.to_thread(mail.close, client)
        return 1


async def mark_gone(engine: AsyncEngine, workspace_id: str, person: str, one: Staged) -> None:
    """Its push service said this subscription is no more: pushed to no longer, unless the
    browser subscribes again after."""
    log.info("a push subscription of %s is gone: %s", person, one.endpoint[:80])
    statement = pg_insert(push_gone).values(
        workspace_id=workspace_id,
        participant_id=person,
        endpoint=one.endpoint,
        gone_at=datetime.now(UTC),
    )
    statement = statement.on_conflict_do_update(
        index_elements=["workspace_id", "participant_id", "endpoint"],
        set_={"gone_at": statement.excluded.gone_at},
    )
    async with engine.begin() as conn:
        await conn.execute(statement)


class PushSender:
    def __init__(
        self,
        engine: AsyncEngine,
        settings: NotifierSettings,
        pusher: Pusher,
        direct: Direct | None = None,
    ) -> None:
        self.engine = engine
        self.direct = direct
        self.settings = settings
        self.pusher = pusher
        self.channel = Channel("push")
        self.stale_claim = settings.push_timeout_seconds * 2 + 5

    async def tick(self) -> int:
        now = datetime.now(UTC)
        await self.channel.give_up_stale(self.engine, now, self.stale_claim, resend=True)
        targets: dict[str, list[Target]] = {}
        stale = self.settings.notify_stale_seconds

        async def decide(row: Any, facts: Facts, people: People) -> tuple[str, datetime | None]:
            found = await people.targets(row.workspace_id, row.participant_id)
            targets[row.id] = found
            return decide_push(facts, now, stale, bool(found)), None

        token, claimed = await claim(self.engine, self.channel, decide, self.direct)
        sent = await asyncio.gather(*(self.send(row, targets[row.id], token) for row, _ in claimed))
        return sum(sent)

    async def send(self, row: Any, to: list[Target], token: datetime) -> int:
        body = payload(self.settings.app_url(), row)
        urgent = row.kind in ASKING
        tries = int(row.push_tries) + 1
        move, ids = self.channel.move, [row.id]
        outcomes: list[str] = []
        staged: list[Staged] = []

        async def stage(target: Target) -> None:
            try:
                staged.append(
                    await asyncio.to_thread(self.pusher.stage, target, body, row.id, urgent)
                )
            except Unusable:
                outcomes.append("refused")
            except OSError:
                outcomes.append("retry")

        await asyncio.gather(*(stage(target) for target in to))
        if staged:
            # The point of no return is each request's last byte: marked before.
            if await move(self.engine, ids, token, "sending", "final") != 1:
                for one in staged:
                    await asyncio.to_thread(Pusher.abandon, one)
                return 0

            async def finish(one: Staged) -> None:
                try:
                    outcomes.append(await asyncio.to_thread(self.pusher.finish, one))
                except (OSError, http.client.HTTPException):
                    outcomes.append("unsure")
                    return
                if outcomes[-1] == "gone":
                    await mark_gone(self.engine, row.workspace_id, row.participant_id, one)

            await asyncio.gather(*(finish(one) for one in staged))
        state = "final" if staged else "sending"
        if "sent" in outcomes:
            await move(self.engine, ids, token, state, "sent")
            return 1
        if "unsure" in outcomes:
            await move(self.engine, ids, token, state, "unsure")
        elif "retry" in outcomes:
            if tries >= MAX_TRIES:
                await move(self.engine, ids, token, state, "failed")
            else:
                later = datetime.now(UTC) + timedelta(seconds=backoff(tries))
                await move(self.engine, ids, token, state, "pending", due=later)
        else:
            log.info("no subscription of %s took a push: %s", row.participant_id, outcomes)
            await move(self.engine, ids, token, state, "skipped")
        return 0
