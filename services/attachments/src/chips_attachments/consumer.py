"""What the attachments service does with committed events: erasure of bytes.

Deleting a space takes its files with it (spec/spaces.md, Deleting one): on
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
from chips_common.service.consumer import Handler

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
                spaces = [row.body["space_id"], *(row.body.get("threads") or [])]
                await erase_files(conn, blobs, workspace_id, spaces)
            stmt = pg_insert(attachments_checkpoints).values(workspace_id=workspace_id, seq=seq)
            await conn.execute(
                stmt.on_conflict_do_update(index_elements=["workspace_id"], set_={"seq": seq})
            )

    return handle


async def erase_files(
    conn: AsyncConnection, blobs: Blobs, workspace_id: str, spaces: list[str]
) -> None:
    a = attachments.c
    gone = (
        await conn.execute(
            delete(attachments)
            .where(and_(a.workspace_id == workspace_id, a.space_id.in_(spaces)))
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
