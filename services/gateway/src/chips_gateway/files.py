"""The room's files, and links to them signed for whoever is sent them.

docs/product/websocket.md, The room's files: the files of one name are its versions, the newest
the current one; ``context.files`` lists the current version of each, newest first, the
20 newest, as of the message. They are read from ``attachments`` (written by the door as
each message posts them) joined to the log, so a message taken back as of a seq takes its
files out of view from that seq on, and an erased room's files are gone with its events.
Every file handed to a credential carries a URL signed for that credential (ten minutes).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import cast

from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_common.clock import iso
from chips_common.db import tables as t
from chips_common.db.attachment_tables import attachments
from chips_common.events import JsonObject
from chips_common.events.wire import AttachmentJson, DeliveredJson
from chips_common.rules.faces import is_image_face
from chips_common.rules.files import disposition_for
from chips_common.rules.signed_urls import URL_TTL_SECONDS, signed_path, url_key
from chips_gateway.reader import LogReader
from chips_gateway.rows import FaceFields, FileRow, Links, RoomFile, RoomFileBy

CONTEXT_FILES = 20


class FileLinks:
    """Signs attachment URLs for one credential at a time, on this gateway's address."""

    def __init__(self, secret: str, base_url: str, ttl: int = URL_TTL_SECONDS) -> None:
        self.key = url_key(secret)
        self.base_url = base_url.rstrip("/")
        self.ttl = ttl

    def links(
        self, attachment_id: str, mime_type: str, thumbnail: bool, credential_id: str, now: float
    ) -> Links:
        """A file's ``url`` and ``url_expires_at`` (and ``thumbnail_url``)."""
        path, exp = signed_path(
            self.key, attachment_id, credential_id, disposition_for(mime_type), now, self.ttl
        )
        links: Links = {
            "url": self.base_url + path,
            "url_expires_at": iso(datetime.fromtimestamp(exp, UTC)),
        }
        if thumbnail:
            thumb, _ = signed_path(
                self.key, attachment_id, credential_id, "thumbnail", now, self.ttl
            )
            links["thumbnail_url"] = self.base_url + thumb
        return links

    def face(self, face: str | None, credential_id: str, now: float) -> FaceFields:
        """An agent's ``face`` as a read carries it (docs/adr/0153), with ``face_url`` signed
        for the reader when it is a picture (always one drawn inline). Empty for none."""
        if not face:
            return {}
        if not is_image_face(face):
            return {"face": face}
        path, _ = signed_path(self.key, face, credential_id, "inline", now, self.ttl)
        return {"face": face, "face_url": self.base_url + path}

    def link(self, item: JsonObject, credential_id: str, now: float) -> JsonObject:
        """An attachment as an event carries it (the catalogue's ``Attachment``, as JSON),
        with its links added."""
        links = self.links(
            str(item["attachment_id"]),
            str(item["mime_type"]),
            bool(item.get("thumbnail")),
            credential_id,
            now,
        )
        linked: JsonObject = {
            **item,
            "url": links["url"],
            "url_expires_at": links["url_expires_at"],
        }
        if "thumbnail_url" in links:
            linked["thumbnail_url"] = links["thumbnail_url"]
        return linked

    def link_attachment(
        self, item: AttachmentJson, credential_id: str, now: float
    ) -> AttachmentJson:
        """:meth:`link` for an attachment an event carries, which stays one."""
        links = self.links(
            item["attachment_id"],
            item["mime_type"],
            bool(item.get("thumbnail")),
            credential_id,
            now,
        )
        linked: AttachmentJson = {
            **item,
            "url": links["url"],
            "url_expires_at": links["url_expires_at"],
        }
        if "thumbnail_url" in links:
            linked["thumbnail_url"] = links["thumbnail_url"]
        return linked

    def link_file(self, item: FileRow, credential_id: str, now: float) -> RoomFile:
        """A room's file with its links added."""
        links = self.links(
            item["attachment_id"], item["mime_type"], item["thumbnail"], credential_id, now
        )
        return {**item, **links}

    def sign_event(self, event: DeliveredJson, credential_id: str) -> DeliveredJson:
        """The event with each of its attachments (and its context's files) linked."""
        now = time.time()
        signed = event
        if event.get("attachments"):
            signed = {
                **signed,
                "attachments": [
                    self.link_attachment(a, credential_id, now) for a in event["attachments"]
                ],
            }
        context = event.get("context")
        if context is not None and context.get("files"):
            # Each a room's file as ``context_files`` read it (a ``FileRow``), as JSON.
            files = [self.link(cast(JsonObject, f), credential_id, now) for f in context["files"]]
            signed = {**signed, "context": {**context, "files": files}}
        return signed


async def room_files(
    engine: AsyncEngine,
    reader: LogReader,
    workspace_id: str,
    space_id: str,
    as_of: int | None = None,
    name: str | None = None,
) -> list[FileRow]:
    """Every version of the room's files as of ``as_of`` (all when None), newest first."""
    a, p, e, m = attachments.c, t.posted_files.c, t.events.c, t.message_marks.c
    message_id = e.body["message_id"].astext
    query = (
        select(
            a.id,
            a.name,
            p.version,
            a.sha256,
            a.byte_size,
            a.mime_type,
            a.kind,
            a.width,
            a.height,
            a.duration_ms,
            a.thumbnail,
            p.replaces,
            a.uploader_id,
            p.posted_seq,
            e.ts,
            e.actor_id,
            message_id.label("message_id"),
            m.deleted_seq,
        )
        .select_from(
            t.posted_files.join(attachments, a.id == p.upload_id)
            .join(t.events, and_(e.workspace_id == p.workspace_id, e.seq == p.posted_seq))
            .outerjoin(t.message_marks, m.message_id == message_id)
        )
        .where(and_(p.workspace_id == workspace_id, p.space_id == space_id))
        .order_by(p.posted_seq.desc(), p.version.desc())
        .limit(2000)
    )
    if as_of is not None:
        query = query.where(p.posted_seq <= as_of)
    if name is not None:
        query = query.where(a.name == name)
    async with engine.connect() as conn:
        rows = (await conn.execute(query)).all()
    rows = [
        r for r in rows if r.deleted_seq is None or (as_of is not None and r.deleted_seq > as_of)
    ]
    # Who posted it is who said the post: an agent, for an agent's words (docs/product/websocket.md,
    # The room's files), though its harness's token uploaded the bytes.
    people = await reader.participants(sorted({r.actor_id for r in rows}))
    # The same bytes posted again are the same version: the version is its first post.
    seen: set[tuple[str, int]] = set()
    files: list[FileRow] = []
    for r in reversed(rows):
        if (r.name, r.version) in seen:
            continue
        seen.add((r.name, r.version))
        who = people.get(r.actor_id)
        by: RoomFileBy = (
            {"id": who["id"], "kind": who["kind"], "name": who["name"]}
            if who
            else {"id": r.actor_id, "kind": "unknown"}
        )
        item: FileRow = {
            "name": r.name,
            "version": r.version,
            "attachment_id": r.id,
            "sha256": r.sha256,
            "byte_size": r.byte_size,
            "mime_type": r.mime_type,
            "kind": r.kind,
            "by": by,
            "at": iso(r.ts),
            "message_id": r.message_id,
            "thumbnail": r.thumbnail,
        }
        if r.width is not None:
            item["width"] = r.width
        if r.height is not None:
            item["height"] = r.height
        if r.duration_ms is not None:
            item["duration_ms"] = r.duration_ms
        if r.replaces is not None:
            item["replaces"] = r.replaces
        files.append(item)
    files.reverse()
    return files


def current_versions(files: list[FileRow], limit: int | None = None) -> list[FileRow]:
    """The newest version of each name, newest first."""
    names: set[str] = set()
    current: list[FileRow] = []
    for item in files:
        if item["name"] in names:
            continue
        names.add(item["name"])
        current.append(item)
        if limit is not None and len(current) >= limit:
            break
    return current


async def context_files(
    engine: AsyncEngine, reader: LogReader, workspace_id: str, space_id: str, seq: int
) -> list[FileRow]:
    """``context.files``: the 20 newest files' current versions, as of the message."""
    files = await room_files(engine, reader, workspace_id, space_id, as_of=seq)
    return current_versions(files, CONTEXT_FILES)
