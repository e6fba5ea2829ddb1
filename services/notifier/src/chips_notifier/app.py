"""Wiring of the notifier: the events consumer that decides notifications, its sweep, and
the senders that mail and push them (docs/adr/0132).

``/readyz`` says what it has built: how many notifications it keeps, how many events of
the log it has still to fold (``behind``), and whether email and push are set up.
"""

from __future__ import annotations

import asyncio

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.db.engine import build_direct
from chips_common.events import JsonObject
from chips_common.service.health import BUILT, About, build_health_app
from chips_common.service.worker import Worker
from chips_notifier.config import NotifierSettings
from chips_notifier.consumer import Live, Spaces, build_handler
from chips_notifier.delivery import EmailSender, PushSender
from chips_notifier.keys import VapidKeys, load_or_make
from chips_notifier.mail import Smtp
from chips_notifier.push import Pusher
from chips_notifier.senders import run_every
from chips_notifier.sweep import sweep


def build_about(engine: AsyncEngine, settings: NotifierSettings) -> About:
    async def about() -> JsonObject:
        async with engine.connect() as conn:
            row = (
                await conn.execute(
                    text(
                        "SELECT (SELECT count(*) FROM notifications) AS notifications,"
                        " (SELECT coalesce(sum(w.head_seq - coalesce(c.seq, 0)), 0)"
                        "  FROM workspaces w LEFT JOIN notifier_checkpoints c"
                        "  ON c.workspace_id = w.id) AS behind"
                    )
                )
            ).one()
        return {
            "builds": "notifications of what waits for each person, mailed and pushed",
            "serves": "nothing over HTTP: the gateway answers GET /v1/notifications",
            "notifications": int(row.notifications),
            "behind": int(row.behind),
            "email": "on" if settings.smtp_host else "off (no CHIPS_SMTP_HOST)",
        }

    return about


async def run(settings: NotifierSettings) -> None:
    async with Worker.wired(settings, "notifier") as worker:
        engine = worker.engine
        # The timers' looks on psycopg itself (docs/adr/0166).
        direct = build_direct(settings, size=2)
        worker.stack.push_async_callback(direct.close)
        # The live notices are core NATS (no stream), on the worker's own connection.
        live = Live(worker.nc, worker.names.subject_prefix)
        known = Spaces()
        handler = build_handler(engine, live, known)
        kept: list[VapidKeys] = []

        async def keys_made() -> bool:
            return bool(kept)

        async def beside(stop: asyncio.Event) -> None:
            keys = await load_or_make(engine)
            kept.append(keys)
            every = settings.notifier_send_seconds
            pusher = Pusher(keys, settings.vapid_subject, settings.push_timeout_seconds)
            pushes = PushSender(engine, settings, pusher, direct)
            work = [
                sweep(engine, live, stop, settings.notifier_sweep_seconds, known, direct),
                run_every(every, stop, pushes.tick, "push"),
            ]
            smtp = Smtp.from_settings(settings)
            if smtp is not None:
                email = EmailSender(engine, settings, smtp, direct)
                work.append(run_every(every, stop, email.tick, "email"))
            await asyncio.gather(*work)

        async def work(stop: asyncio.Event) -> None:
            # Only the events that may make or settle a notice prompt a fold; the rest
            # are acked as they come, and the sweep moves the checkpoint past them.
            # Asked for at most every CHIPS_CONSUMER_HOLD_SECONDS; a read of a person's
            # notifications that waits asks for the workspace (docs/adr/0168).
            consuming = worker.consume(
                handler, stop, wanted=known.may_act, pace=settings.consumer_hold_seconds
            )
            await asyncio.gather(consuming, beside(stop))

        health = build_health_app(
            {**worker.checks(), "vapid_keys": keys_made}, BUILT, build_about(engine, settings)
        )
        await worker.serve(health, work)
