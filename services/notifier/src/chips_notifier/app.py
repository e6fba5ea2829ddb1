"""Wiring of the notifier: the events consumer that decides notifications, its sweep, and
the senders that mail and push them (docs/adr/0132).

``/readyz`` says what it has built: how many notifications it keeps, how many events of
the log it has still to fold (``behind``), and whether email and push are set up.
"""

from __future__ import annotations

import asyncio

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.events import JsonObject
from chips_common.nats.connect import build_nats
from chips_common.nats.streams import Names
from chips_common.service.consumer import Handler
from chips_common.service.health import About, Check
from chips_common.service.worker import run_worker
from chips_notifier.config import NotifierSettings
from chips_notifier.consumer import Live, build_handler, sweep
from chips_notifier.delivery import EmailSender, PushSender
from chips_notifier.keys import VapidKeys, load_or_make
from chips_notifier.mail import Smtp
from chips_notifier.push import Pusher
from chips_notifier.senders import run_every


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
    # Its own connection for the live notices, which are core NATS (no stream).
    nc = await build_nats(settings, name="chips-notifier-live")
    live = Live(nc, Names.from_settings(settings).subject_prefix)

    kept: list[VapidKeys] = []

    def handler(engine: AsyncEngine) -> Handler:
        return build_handler(engine, live)

    def checks(engine: AsyncEngine) -> dict[str, Check]:
        async def keys_made() -> bool:
            return bool(kept)

        return {"vapid_keys": keys_made}

    async def beside(engine: AsyncEngine, stop: asyncio.Event) -> None:
        keys = await load_or_make(engine)
        kept.append(keys)
        every = settings.notifier_send_seconds
        pushes = PushSender(
            engine, settings, Pusher(keys, settings.vapid_subject, settings.push_timeout_seconds)
        )
        work = [
            sweep(engine, live, stop, settings.notifier_sweep_seconds),
            run_every(every, stop, pushes.tick, "push"),
        ]
        smtp = Smtp.from_settings(settings)
        if smtp is not None:
            work.append(run_every(every, stop, EmailSender(engine, settings, smtp).tick, "email"))
        await asyncio.gather(*work)

    try:
        await run_worker(
            settings,
            "notifier",
            handler,
            checks=checks,
            about=lambda engine: build_about(engine, settings),
            beside=beside,
        )
    finally:
        await nc.drain()
