"""The inbox, read from the notifier's rows, and a person's notification settings
(docs/adr/0132, docs/notifications.md).

Every list and count joins the caller's rooms as of now (``guard.spaces_of``): a person
who left a room lists nothing of it. A muted room shows only approvals and questions that
only this person answers, in the counts and in ``needs_me``; ``all`` shows everything.

Live sync: the notifier (after each fold) and the gateway (after marking read) publish
``{workspace_id, participant_id, ids}`` on ``<prefix>.notice.notification.<workspace>``;
every gateway hears it, and for a person with sockets here sends each socket a
``notification`` frame per row with the new unread count.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TypedDict

from nats.aio.client import Client as Nats
from nats.aio.msg import Msg
from sqlalchemy import and_, delete, false, func, literal, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql import ColumnElement, Select

from chips_common.db.notifier_tables import (
    notification_mutes,
    notification_prefs,
    notification_reads,
    notifications,
    notifier_checkpoints,
    notifier_keys,
    push_subscriptions,
)
from chips_common.rules.notifications import ASKING, Notification, Prefs, listed, parse_prefs
from chips_gateway.frames import NotificationFrame
from chips_gateway.guard import spaces_of
from chips_gateway.sockets import Sockets

log = logging.getLogger(__name__)

_n = notifications.c
_r = notification_reads.c
_m = notification_mutes.c
FILTERS = ("needs_me", "all")


def live_subject(prefix: str, workspace_id: str) -> str:
    """Core NATS: the notifications of a workspace made or changed (docs/adr/0132)."""
    return f"{prefix}.notice.notification.{workspace_id}"


def _joined(workspace_id: str, participant_id: str) -> Any:
    return notifications.outerjoin(notification_reads, _r.notification_id == _n.id).outerjoin(
        notification_mutes,
        and_(
            _m.workspace_id == _n.workspace_id,
            _m.participant_id == _n.participant_id,
            _m.space_id == _n.room_id,
        ),
    )


def _mine(workspace_id: str, participant_id: str) -> list[ColumnElement[bool]]:
    return [
        _n.workspace_id == workspace_id,
        _n.participant_id == participant_id,
        _n.room_id.in_(spaces_of(participant_id, workspace_id)),
    ]


# A muted room still shows approvals and questions only this person answers.
_SHOWN = or_(_m.space_id.is_(None), and_(_n.kind.in_(sorted(ASKING)), _n.sole))
_UNREAD = and_(_r.read_at.is_(None), _n.done_at.is_(None), _SHOWN)
_NEEDS_ME = and_(
    _n.done_at.is_(None), or_(_n.kind.in_(sorted(ASKING)), _r.read_at.is_(None)), _SHOWN
)


def _rows(workspace_id: str, participant_id: str) -> Select[Any]:
    return select(
        _n.id,
        _n.kind,
        _n.space_id,
        _n.space_name,
        _n.seq,
        _n.ref_id,
        _n.title,
        _n.body,
        _n.created_at,
        _r.read_at,
        _n.done_at,
        _n.done_reason,
    ).select_from(_joined(workspace_id, participant_id))


class InboxPage(TypedDict):
    notifications: list[Notification]
    unread: int
    needs_me: int
    as_of_seq: int


def shape(row: Any) -> Notification:
    return listed(row, row.read_at)


class Inbox:
    def __init__(self, engine: AsyncEngine, sockets: Sockets, prefix: str) -> None:
        self.engine = engine
        self.sockets = sockets
        self.prefix = prefix
        self.nc: Nats | None = None

    # --- reads --------------------------------------------------------------------

    async def counts(self, workspace_id: str, participant_id: str) -> tuple[int, int]:
        query = (
            select(
                func.count().filter(_UNREAD).label("unread"),
                func.count().filter(_NEEDS_ME).label("needs_me"),
            )
            .select_from(_joined(workspace_id, participant_id))
            .where(and_(*_mine(workspace_id, participant_id)))
        )
        async with self.engine.connect() as conn:
            row = (await conn.execute(query)).one()
        return int(row.unread), int(row.needs_me)

    async def page(
        self,
        workspace_id: str,
        participant_id: str,
        which: str,
        limit: int,
        before: str | None,
    ) -> list[Notification]:
        where = _mine(workspace_id, participant_id)
        if which == "needs_me":
            where.append(_NEEDS_ME)
        if before:
            where.append(_n.id < before)
        query = (
            _rows(workspace_id, participant_id)
            .where(and_(*where))
            .order_by(_n.id.desc())
            .limit(limit)
        )
        async with self.engine.connect() as conn:
            return [shape(row) for row in await conn.execute(query)]

    async def by_ids(
        self, workspace_id: str, participant_id: str, ids: Sequence[str]
    ) -> list[Notification]:
        query = (
            _rows(workspace_id, participant_id)
            .where(and_(*_mine(workspace_id, participant_id), _n.id.in_(list(ids))))
            .order_by(_n.id)
        )
        async with self.engine.connect() as conn:
            return [shape(row) for row in await conn.execute(query)]

    async def folded(self, workspace_id: str) -> int:
        """The seq the notifier has folded the workspace's log up to."""
        c = notifier_checkpoints.c
        async with self.engine.connect() as conn:
            found = await conn.execute(select(c.seq).where(c.workspace_id == workspace_id))
            return int(found.scalar() or 0)

    # --- marking read -------------------------------------------------------------

    async def mark_read(
        self, workspace_id: str, participant_id: str, ids: Sequence[str] | None
    ) -> list[str]:
        """Mark the caller's notifications read (``ids``, or all when None); the ids that
        were unread."""
        where = [*_mine(workspace_id, participant_id), _r.read_at.is_(None)]
        if ids is not None:
            where.append(_n.id.in_(list(ids)) if ids else false())
        now = datetime.now(UTC)
        chosen = (
            select(_n.id, _n.workspace_id, _n.participant_id, literal(now).label("read_at"))
            .select_from(_joined(workspace_id, participant_id))
            .where(and_(*where))
        )
        statement = (
            pg_insert(notification_reads)
            .from_select(["notification_id", "workspace_id", "participant_id", "read_at"], chosen)
            .on_conflict_do_nothing(index_elements=["notification_id"])
            .returning(_r.notification_id)
        )
        async with self.engine.begin() as conn:
            marked = [row.notification_id for row in await conn.execute(statement)]
        await self.publish(workspace_id, participant_id, marked)
        return marked

    # --- settings -----------------------------------------------------------------

    async def prefs(self, workspace_id: str, participant_id: str) -> Prefs:
        c = notification_prefs.c
        async with self.engine.connect() as conn:
            body = (
                await conn.execute(
                    select(c.body).where(
                        and_(c.workspace_id == workspace_id, c.participant_id == participant_id)
                    )
                )
            ).scalar()
        return parse_prefs(body) if body else Prefs()

    async def save_prefs(self, workspace_id: str, participant_id: str, prefs: Prefs) -> None:
        body: dict[str, object] = dict(prefs.answer(0))
        if prefs.email_delay_seconds is None:
            body.pop("email_delay_seconds")
        statement = pg_insert(notification_prefs).values(
            workspace_id=workspace_id,
            participant_id=participant_id,
            body=body,
            updated_at=datetime.now(UTC),
        )
        statement = statement.on_conflict_do_update(
            index_elements=["workspace_id", "participant_id"],
            set_={"body": statement.excluded.body, "updated_at": statement.excluded.updated_at},
        )
        async with self.engine.begin() as conn:
            await conn.execute(statement)

    async def muted(self, workspace_id: str, participant_id: str, space_id: str) -> bool:
        where = [
            _m.workspace_id == workspace_id,
            _m.participant_id == participant_id,
            _m.space_id == space_id,
        ]
        async with self.engine.connect() as conn:
            return (await conn.execute(select(_m.space_id).where(and_(*where)))).first() is not None

    async def set_muted(
        self, workspace_id: str, participant_id: str, space_id: str, muted: bool
    ) -> None:
        async with self.engine.begin() as conn:
            if muted:
                await conn.execute(
                    pg_insert(notification_mutes)
                    .values(
                        workspace_id=workspace_id,
                        participant_id=participant_id,
                        space_id=space_id,
                        muted_at=datetime.now(UTC),
                    )
                    .on_conflict_do_nothing()
                )
            else:
                await conn.execute(
                    delete(notification_mutes).where(
                        and_(
                            _m.workspace_id == workspace_id,
                            _m.participant_id == participant_id,
                            _m.space_id == space_id,
                        )
                    )
                )

    async def vapid_public_key(self) -> str | None:
        async with self.engine.connect() as conn:
            found = await conn.execute(
                select(notifier_keys.c.public_key).where(notifier_keys.c.name == "vapid")
            )
            return found.scalar()

    async def subscribe(
        self, workspace_id: str, participant_id: str, endpoint: str, p256dh: str, auth: str
    ) -> None:
        statement = pg_insert(push_subscriptions).values(
            workspace_id=workspace_id,
            participant_id=participant_id,
            endpoint=endpoint,
            p256dh=p256dh,
            auth=auth,
            created_at=datetime.now(UTC),
        )
        statement = statement.on_conflict_do_update(
            index_elements=["workspace_id", "participant_id", "endpoint"],
            # Subscribed again: a newer subscription than one its push service said is gone.
            set_={
                "p256dh": statement.excluded.p256dh,
                "auth": statement.excluded.auth,
                "created_at": statement.excluded.created_at,
            },
        )
        async with self.engine.begin() as conn:
            await conn.execute(statement)

    async def unsubscribe(self, workspace_id: str, participant_id: str, endpoint: str) -> int:
        c = push_subscriptions.c
        async with self.engine.begin() as conn:
            done = await conn.execute(
                delete(push_subscriptions).where(
                    and_(
                        c.workspace_id == workspace_id,
                        c.participant_id == participant_id,
                        c.endpoint == endpoint,
                    )
                )
            )
            return int(done.rowcount or 0)

    # --- live sync ----------------------------------------------------------------

    async def start(self, nc: Nats) -> None:
        self.nc = nc
        await nc.subscribe(f"{self.prefix}.notice.notification.*", cb=self._on_notice)

    async def publish(self, workspace_id: str, participant_id: str, ids: Sequence[str]) -> None:
        if self.nc is None or not ids:
            return
        body = {"workspace_id": workspace_id, "participant_id": participant_id, "ids": list(ids)}
        with contextlib.suppress(Exception):  # best effort: the app reads the list again
            await self.nc.publish(
                live_subject(self.prefix, workspace_id), json.dumps(body).encode()
            )

    async def _on_notice(self, msg: Msg) -> None:
        try:
            body = json.loads(msg.data)
            workspace_id, participant_id = str(body["workspace_id"]), str(body["participant_id"])
            ids = [str(i) for i in body["ids"]][:500]
        except (ValueError, KeyError, TypeError):
            log.warning("a notification notice that is not one was ignored")
            return
        if not self.sockets.has(participant_id):
            return
        try:
            rows = await self.by_ids(workspace_id, participant_id, ids)
            unread, _ = await self.counts(workspace_id, participant_id)
        except Exception:
            log.exception("the notifications of a notice could not be read")
            return
        for row in rows:
            frame: NotificationFrame = {
                "frame": "notification",
                "type": "notification",
                "notification": row,
                "unread": unread,
            }
            self.sockets.send(participant_id, frame)
