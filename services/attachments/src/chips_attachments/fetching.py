"""``GET /v1/attachments/:id`` (and its thumbnail): who may fetch a file, and its bytes.

A fetch is allowed by a URL signed for a credential or by the caller's own token, to a
member of the room the file was posted in while its message stands; a harness's fetch is
logged in the room before a byte is sent. A picture that is an agent's face is drawn for
whoever is told of the agent (docs/adr/0153). A download is never rendered by a browser.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from typing import Any
from urllib.parse import quote

from fastapi.responses import Response, StreamingResponse
from sqlalchemy import and_, func, select

from chips_attachments.appender import Unavailable
from chips_attachments.service import Problem, Service, caller
from chips_attachments.store import blob_key, thumb_key
from chips_common.append import Actor
from chips_common.db import tables as t
from chips_common.db.attachment_tables import attachments
from chips_common.db.principals import Principal, principal_for_credential
from chips_common.events import JsonObject
from chips_common.rules.files import disposition_for
from chips_common.rules.signed_urls import check_signature

log = logging.getLogger(__name__)


# A download is never rendered by a browser, and never sniffed into something that runs.
DOWNLOAD_CSP = "default-src 'none'; sandbox"
INLINE_CSP = "default-src 'none'; img-src 'self'; object-src 'self'; sandbox"


_ID = re.compile(r"^att_[0-9A-Za-z]{1,40}$")


async def fetch_file(
    service: Service,
    attachment_id: str,
    exp: str | None,
    tok: str | None,
    sig: str | None,
    authorization: str | None,
    thumbnail: bool,
) -> Response:
    if not _ID.match(attachment_id):
        raise Problem("not_found", "no such file")
    async with service.engine.connect() as conn:
        p = t.posted_files.c
        row = (
            await conn.execute(
                select(attachments, p.space_id, p.posted_seq)
                .select_from(attachments.outerjoin(t.posted_files, p.upload_id == attachments.c.id))
                .where(attachments.c.id == attachment_id)
            )
        ).first()
    if row is None:
        raise Problem("not_found", "no such file")
    disposition = "thumbnail" if thumbnail else disposition_for(row.mime_type)
    if exp is not None or tok is not None or sig is not None or not authorization:
        why = check_signature(service.keys, attachment_id, exp, tok, disposition, sig, time.time())
        if why is not None:
            raise Problem("forbidden", why)
        assert tok is not None
        principal = await principal_for_credential(service.engine, tok)
        if principal is None:
            raise Problem("forbidden", "the token this link was made for was withdrawn")
    else:
        principal = await caller(service, authorization)
    if principal.workspace_id != row.workspace_id:
        raise Problem("not_found", "no such file")
    # An agent's face is for whoever is told of the agent (docs/adr/0153), looked for only
    # where the file's own rule would refuse, so a room's files cost no more to fetch.
    if row.space_id is None:
        # An upload not posted is its sender's.
        theirs = principal.participant_id == row.uploader_id
        if not theirs and not await _face_seen(service, row, principal):
            raise Problem("not_found", "no such file")
    else:
        try:
            message_id = await _check_room(service, row, principal)
        except Problem:
            if not await _face_seen(service, row, principal):
                raise
        else:
            if principal.kind == "harness":
                await _audit(service, row, principal, message_id, thumbnail)
    if thumbnail and not row.thumbnail:
        raise Problem("not_found", "this file has no thumbnail")
    key = thumb_key(row.sha256) if thumbnail else blob_key(row.sha256)
    try:
        opened = await asyncio.wait_for(service.blobs.open(key), service.blobs.deadline)
    except Exception as exc:
        log.warning("S3 did not answer a fetch: %r", exc)
        raise Problem(
            "unavailable", "the file store is not reachable right now; fetch it again in a moment"
        ) from None
    if opened is None:
        raise Problem("not_found", "no such file")
    size, chunks = opened
    return StreamingResponse(chunks, headers=_headers(row, size, thumbnail))


async def _face_seen(service: Service, row: Any, principal: Principal) -> bool:
    """Whether the file is the face of an agent ``principal`` is told of: every harness and
    every person of the workspace but a guest, and a guest who shares a room with it."""
    p, m = t.participants.c, t.memberships.c
    async with service.engine.connect() as conn:
        agents = [
            r.id
            for r in await conn.execute(
                select(p.id).where(
                    and_(
                        p.workspace_id == row.workspace_id,
                        p.kind == "agent",
                        p.agent["face"].astext == row.id,
                    )
                )
            )
        ]
        if not agents or principal.kind != "person" or principal.role != "guest":
            return bool(agents)
        theirs = select(m.space_id).where(m.participant_id.in_(agents))
        shared = await conn.execute(
            select(m.space_id)
            .where(and_(m.participant_id == principal.participant_id, m.space_id.in_(theirs)))
            .limit(1)
        )
        return shared.first() is not None


async def _check_room(service: Service, row: Any, principal: Principal) -> str | None:
    """The posting message's id, once the caller is in the file's room and it stands."""
    s, m = t.spaces.c, t.memberships.c
    room = func.coalesce(
        select(s.parent_space_id).where(s.id == row.space_id).scalar_subquery(), row.space_id
    )
    e = t.events.c
    async with service.engine.connect() as conn:
        member = (
            await conn.execute(
                select(m.standing).where(
                    and_(m.space_id == room, m.participant_id == principal.participant_id)
                )
            )
        ).first()
        if member is None:
            raise Problem("forbidden", "you are not in the room this file was posted in")
        message_id = (
            await conn.execute(
                select(e.body["message_id"].astext).where(
                    and_(e.workspace_id == row.workspace_id, e.seq == row.posted_seq)
                )
            )
        ).scalar()
        if message_id is None:
            raise Problem("not_found", "no such file")
        taken_back = (
            await conn.execute(
                select(t.message_marks.c.deleted_seq).where(
                    t.message_marks.c.message_id == message_id
                )
            )
        ).scalar()
    if taken_back is not None:
        raise Problem("not_found", "the message that posted this file was taken back")
    return str(message_id)


async def _audit(
    service: Service, row: Any, principal: Principal, message_id: str | None, thumbnail: bool
) -> None:
    event: JsonObject = {
        "type": "attachment.fetched",
        "space_id": row.space_id,
        "attachment_id": row.id,
        "name": row.name,
        "message_id": message_id,
    }
    if thumbnail:
        event["thumbnail"] = True
    try:
        answer = await service.appender.append(
            row.workspace_id,
            principal.credential_id,
            Actor(kind="harness", id=principal.participant_id),
            event,
        )
    except Unavailable:
        raise Problem("unavailable", "the log did not answer in time; fetch it again") from None
    if not answer.ok:
        raise Problem(answer.code or "forbidden", answer.message or "this fetch was refused")


def _headers(row: Any, size: int, thumbnail: bool) -> dict[str, str]:
    headers = {
        "Content-Length": str(size),
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "private, max-age=600",
        "Cross-Origin-Resource-Policy": "same-site",
    }
    if thumbnail:
        headers["Content-Type"] = "image/jpeg"
        headers["Content-Disposition"] = "inline"
        headers["Content-Security-Policy"] = INLINE_CSP
        return headers
    disposition = disposition_for(row.mime_type)
    ascii_name = row.name.encode("ascii", "replace").decode().replace('"', "'").replace("?", "_")
    headers["Content-Type"] = row.mime_type
    headers["Content-Disposition"] = (
        f"{disposition}; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(row.name)}"
    )
    headers["Content-Security-Policy"] = INLINE_CSP if disposition == "inline" else DOWNLOAD_CSP
    return headers
