"""Hearing posted voice notes, off every request's path (docs/adr/0137).

An upload is answered as soon as its bytes are stored; a voice note is heard only once a
message posts it, by a loop of each attachments replica: it claims one posted voice note
not heard yet (``FOR UPDATE SKIP LOCKED``, held until ``hearing_until``, so two replicas
never hear one note together and a replica that dies lets it go), fetches its bytes,
hears them in a worker thread under a time limit, and logs ``attachment.transcribed`` as
Chips, under a key made from the note, so hearing it again after a crash logs nothing
twice. What it heard is in the log (a rebuild keeps it); ``heard_at`` only says it was
logged. A note that could not be heard says why, in the same event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_attachments.appender import Appender, Unavailable
from chips_attachments.config import AttachmentsSettings
from chips_attachments.store import Blobs, blob_key
from chips_attachments.voice import Engine, Heard, hear
from chips_common.append import Actor
from chips_common.db import tables as t
from chips_common.db.attachment_tables import attachments
from chips_common.db.direct import Conn, Direct
from chips_common.events import JsonObject

log = logging.getLogger(__name__)

SYSTEM = Actor(kind="system", id="system")
# The attachments service's own credential for what Chips writes: no client's key can
# collide with its keys.
CREDENTIAL = "crd_attachments"


# What ``Hearing.claim`` would take, held by another replica or not: is there any?
WAITING = (
    "SELECT EXISTS(SELECT 1 FROM attachments a JOIN posted_files p ON p.upload_id = a.id"
    " WHERE a.kind = 'voice_note' AND a.heard_at IS NULL"
    " AND (a.hearing_until IS NULL OR a.hearing_until < %(now)s)) AS waiting"
)


@dataclass(frozen=True)
class Claimed:
    """A posted voice note this replica holds: its upload, and where its post put it."""

    upload: Any
    space_id: str
    posted_seq: int

    def __getattr__(self, name: str) -> Any:
        return getattr(self.upload, name)


@dataclass
class Hearing:
    settings: AttachmentsSettings
    engine: AsyncEngine
    blobs: Blobs
    appender: Appender
    transcriber: Engine | None
    # The idle look on psycopg itself (``waiting``; docs/adr/0166); None: every look claims.
    direct: Direct | None = None

    @property
    def engine_name(self) -> str:
        return self.transcriber.name if self.transcriber is not None else "none"

    async def run(self, stop: asyncio.Event) -> None:
        """Hear what is waiting, then look again every ``hearing_poll_seconds``."""
        while not stop.is_set():
            try:
                heard_one = await self.hear_next()
            except Exception:  # the loop outlives a database or a store away
                log.exception("hearing a voice note failed; trying again shortly")
                heard_one = False
            if not heard_one:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.settings.hearing_poll_seconds)

    async def waiting(self, now: datetime) -> bool:
        """Whether a posted voice note may be waiting (``claim``'s rows, held or not): one
        autocommit statement on psycopg itself, so a look that finds nothing costs no
        transaction and no SQLAlchemy (docs/adr/0166). Without ``direct``, True."""
        if self.direct is None:
            return True

        async def one(conn: Conn) -> bool:
            row = await (await conn.execute(WAITING, {"now": now})).fetchone()
            return bool(row is not None and row.waiting)

        return await self.direct.run(one)

    async def claim(self) -> Claimed | None:
        """The oldest posted voice note nobody heard or is hearing, held for this replica:
        the upload with the room and seq its post gave it (``posted_files``, ADR 0140)."""
        a, p = attachments.c, t.posted_files.c
        now = datetime.now(UTC)
        if not await self.waiting(now):
            return None
        hold = timedelta(seconds=self.settings.hearing_timeout_seconds * 2 + 30)
        waiting = (
            select(a.id)
            .select_from(attachments.join(t.posted_files, p.upload_id == a.id))
            .where(
                and_(
                    a.kind == "voice_note",
                    a.heard_at.is_(None),
                    or_(a.hearing_until.is_(None), a.hearing_until < now),
                )
            )
            .order_by(p.posted_seq)
            .limit(1)
            .with_for_update(of=attachments, skip_locked=True)
            .scalar_subquery()
        )
        async with self.engine.begin() as conn:
            claimed = (
                await conn.execute(
                    update(attachments)
                    .where(a.id == waiting)
                    .values(hearing_until=now + hold)
                    .returning(attachments)
                )
            ).first()
            if claimed is None:
                return None
            posted = (
                await conn.execute(
                    select(p.space_id, p.posted_seq).where(p.upload_id == claimed.id)
                )
            ).one()
        return Claimed(claimed, posted.space_id, posted.posted_seq)

    async def hear_next(self) -> bool:
        """Hear one posted voice note, if one is waiting; whether one was."""
        row: Claimed | None = await self.claim()
        if row is None:
            return False
        message_id = await self.message_of(row)
        if message_id is None:  # the post is gone with its room
            await self.done(row.id)
            return True
        heard = await self.listen(row)
        event: JsonObject = {
            "type": "attachment.transcribed",
            "space_id": row.space_id,
            "message_id": message_id,
            "attachment_id": row.id,
            "outcome": heard.outcome,
            "engine": self.engine_name,
        }
        if heard.transcript is not None:
            event["transcript"] = heard.transcript
        if heard.note is not None:
            event["note"] = heard.note
        try:
            answer = await self.appender.append(
                row.workspace_id, CREDENTIAL, SYSTEM, event, key=f"heard:{row.id}"
            )
        except Unavailable:
            log.warning("the log did not answer; %s will be heard again", row.id)
            await self.release(row.id)
            return True
        if not answer.ok and answer.code != "duplicate":
            # Refused (its room erased meanwhile): nothing more will come of hearing it.
            log.info("what %s said was refused: %s %s", row.id, answer.code, answer.message)
        await self.done(row.id)
        return True

    async def listen(self, row: Claimed) -> Heard:
        if self.transcriber is None:
            return Heard("failed", note="Not transcribed: no transcriber is set up here.")
        max_ms = self.settings.voice_note_max_seconds * 1000
        with tempfile.TemporaryDirectory(
            prefix="chips-hear-", dir=self.settings.spool_dir or None
        ) as spool:
            path = Path(spool) / "note"
            try:
                opened = await self.blobs.open(blob_key(row.sha256))
                if opened is None:
                    return Heard("failed", note="Not transcribed: its bytes are gone.")
                _, chunks = opened
                with path.open("wb") as out:
                    async for chunk in chunks:
                        out.write(chunk)
            except Exception as exc:
                log.warning("S3 did not give %s to hear: %r", row.id, exc)
                raise
            try:
                return await asyncio.wait_for(
                    asyncio.to_thread(
                        hear, path, row.mime_type, row.duration_ms, self.transcriber, max_ms
                    ),
                    self.settings.hearing_timeout_seconds,
                )
            except TimeoutError:
                return Heard("failed", note="Not transcribed: hearing it took too long.")
            except Exception as exc:  # an engine's failure is said, never hidden
                log.exception("hearing %s failed", row.id)
                return Heard(
                    "failed", note=f"Not transcribed: the transcriber failed ({exc!r:.120})."
                )

    async def message_of(self, row: Claimed) -> str | None:
        e = t.events.c
        async with self.engine.connect() as conn:
            found = (
                await conn.execute(
                    select(e.body["message_id"].astext).where(
                        and_(e.workspace_id == row.workspace_id, e.seq == row.posted_seq)
                    )
                )
            ).scalar()
        return str(found) if found is not None else None

    async def done(self, attachment_id: str) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(
                update(attachments)
                .where(attachments.c.id == attachment_id)
                .values(heard_at=datetime.now(UTC), hearing_until=None)
            )

    async def release(self, attachment_id: str) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(
                update(attachments)
                .where(attachments.c.id == attachment_id)
                .values(hearing_until=None)
            )
