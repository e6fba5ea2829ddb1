"""What the attachments service does with committed events: erasure of bytes.

Deleting a space takes its files with it (docs/product/spaces.md, Deleting one): on
``space.erased`` the uploads posted in the space and its threads are forgotten, and the
bytes and thumbnails no other upload still holds are deleted from S3. The objects go
before the transaction that forgets the rows commits, so a crash in between deletes them
again on redelivery (deleting is idempotent) and nothing is left behind. The checkpoint
is written in the same transaction.
"""

from __future__ import annotations

import logging

from sqlalchemy import and_, delete, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from chips_attachments.store import Blobs, blob_key, thumb_key
from chips_common.db import tables as t
from chips_common.db.attachment_tables import attachments, attachments_checkpoints
from chips_common.events import canonical
from chips_common.service.consumer import Handler
from chips_common.service.poison import folding, set_aside

log = logging.getLogger(__name__)


def build_handler(engine: AsyncEngine, blobs: Blobs) -> Handler:
    async def handle(workspace_id: str, seq: int) -> None:
        async with engine.begin() as conn:
            done = (
                await conn.execute(
                    select(attachments_checkpoints.c.seq)
                    .where(attachments_checkpoints.c.workspace_id == workspace_id)
                    .with_for_update()
                )
            ).scalar() or 0
            if done >= seq:
                return
            e = t.events.c
            erased = (
                await conn.execute(
                    select(e.seq, e.body)
                    .where(
                        and_(
                            e.workspace_id == workspace_id,
                            e.seq > done,
                            e.seq <= seq,
                            e.type == "space.erased",
                        )
                    )
                    .order_by(e.seq)
                )
            ).all()
            for row in erased:
                event = canonical(row.body)
                if set_aside(event):  # dead-lettered: read past (docs/adr/0148)
                    continue
                with folding(event):
                    spaces = [event["space_id"], *(event.get("threads") or [])]
                    await erase_files(conn, blobs, workspace_id, spaces)
            stmt = pg_insert(attachments_checkpoints).values(workspace_id=workspace_id, seq=seq)
            await conn.execute(
                stmt.on_conflict_do_update(index_elements=["workspace_id"], set_={"seq": seq})
            )

    return handle


async def erase_files(
    conn: AsyncConnection, blobs: Blobs, workspace_id: str, spaces: list[str]
) -> None:
    a, p = attachments.c, t.posted_files.c
    posted_there = select(p.upload_id).where(
        and_(p.workspace_id == workspace_id, p.space_id.in_(spaces))
    )
    gone = (
        await conn.execute(
            delete(attachments)
            .where(and_(a.workspace_id == workspace_id, a.id.in_(posted_there)))
            .returning(a.sha256)
        )
    ).all()
    digests = sorted({r.sha256 for r in gone})
    if not digests:
        return
    held = (
        await conn.execute(
            select(a.sha256)
            .where(a.sha256.in_(digests))
            .group_by(a.sha256)
            .having(func.count() > 0)
        )
    ).all()
    unheld = [d for d in digests if d not in {r.sha256 for r in held}]
    keys = [k for d in unheld for k in (blob_key(d), thumb_key(d))]
    await blobs.delete(keys)
    log.info("erased %d files of %s: %d objects deleted", len(gone), spaces[0], len(keys))
