"""``POST /v1/uploads`` and ``GET /v1/attachments/:id`` (docs/protocol.md, Attachments).

An upload's bytes come as the request body, read in chunks onto disk while they are
hashed, so the service never holds a file whole in memory; what they are is sniffed from
them, and they are kept (stripped, thumbnailed) once by their sha256. A fetch is allowed
by a URL signed for a credential or by the caller's own token, to a member of the room
the file was posted in; a harness's fetch is logged in the room before a byte is sent.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import tempfile
import time
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from sqlalchemy import and_, func, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from chips_attachments.appender import Appender, Unavailable
from chips_attachments.config import AttachmentsSettings
from chips_attachments.media import HEAD_BYTES, Kept, Unacceptable, keep, kind_for, sniff
from chips_attachments.store import Blobs, blob_key, thumb_key
from chips_common.append import Actor
from chips_common.db import tables as t
from chips_common.db.attachment_tables import attachments
from chips_common.db.principals import (
    Principal,
    bearer,
    principal_for_credential,
    principal_for_token,
)
from chips_common.ids import new_id
from chips_common.rules.files import Caps, disposition_for, over_cap, size_words
from chips_common.rules.signed_urls import check_signature, url_key

log = logging.getLogger(__name__)

STATUS = {
    "invalid_request": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "not_found": 404,
    "too_large": 413,
    "image_too_large": 422,
    "unreadable_file": 422,
    "unavailable": 503,
}
# A download is never rendered by a browser, and never sniffed into something that runs.
DOWNLOAD_CSP = "default-src 'none'; sandbox"
INLINE_CSP = "default-src 'none'; img-src 'self'; object-src 'self'; sandbox"


class Problem(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def problem_response(exc: Problem) -> JSONResponse:
    return JSONResponse(
        {"code": exc.code, "message": exc.message}, status_code=STATUS.get(exc.code, 400)
    )


@dataclass
class Service:
    settings: AttachmentsSettings
    engine: AsyncEngine
    blobs: Blobs
    appender: Appender

    @property
    def keys(self) -> list[bytes]:
        keys = [url_key(self.settings.signing_key)]
        if self.settings.previous_signing_key:
            keys.append(url_key(self.settings.previous_signing_key))
        return keys


def build_router(service: Service) -> APIRouter:
    router = APIRouter(prefix="/v1")

    @router.post("/uploads")
    async def upload(
        request: Request,
        name: Annotated[str | None, Query(max_length=255)] = None,
        keep_metadata: bool = False,
        authorization: Annotated[str | None, Header()] = None,
    ) -> JSONResponse:
        try:
            principal = await _caller(service, authorization)
            return JSONResponse(
                await _upload(service, principal, request, name, keep_metadata), status_code=201
            )
        except Problem as exc:
            return problem_response(exc)

    @router.get("/uploads/caps")
    async def caps(authorization: Annotated[str | None, Header()] = None) -> JSONResponse:
        try:
            principal = await _caller(service, authorization)
        except Problem as exc:
            return problem_response(exc)
        found = await caps_of(service, principal.workspace_id)
        return JSONResponse(
            {
                "ceiling_bytes": found.ceiling,
                "photos_bytes": found.cap_for("photo"),
                "videos_bytes": found.cap_for("video"),
                "files_bytes": found.cap_for("file"),
            }
        )

    # A file and its thumbnail are one handler: the same checks, the same audit; only the
    # bytes and their headers differ.
    @router.get("/attachments/{attachment_id}")
    @router.get("/attachments/{attachment_id}/thumbnail")
    async def fetch(
        request: Request,
        attachment_id: str,
        exp: str | None = None,
        tok: str | None = None,
        sig: str | None = None,
        authorization: Annotated[str | None, Header()] = None,
    ) -> Response:
        thumbnail = request.url.path.endswith("/thumbnail")
        try:
            return await _fetch(service, attachment_id, exp, tok, sig, authorization, thumbnail)
        except Problem as exc:
            return problem_response(exc)

    return router


async def _caller(service: Service, authorization: str | None) -> Principal:
    token = bearer(authorization)
    if token is None:
        raise Problem("unauthorized", "send your token as Authorization: Bearer <token>")
    principal = await principal_for_token(service.engine, token)
    if principal is None:
        raise Problem("unauthorized", "that token is not known or was withdrawn")
    return principal


async def caps_of(service: Service, workspace_id: str) -> Caps:
    """The workspace's caps: the newest ``attachment.caps_set`` in its log, under the ceiling."""
    e = t.events.c
    async with service.engine.connect() as conn:
        body = (
            await conn.execute(
                select(e.body)
                .where(and_(e.workspace_id == workspace_id, e.type == "attachment.caps_set"))
                .order_by(e.seq.desc())
                .limit(1)
            )
        ).scalar()
    ceiling = service.settings.max_attachment_bytes
    if not body:
        return Caps(ceiling)
    return Caps(
        ceiling,
        photos=body.get("photos_bytes"),
        videos=body.get("videos_bytes"),
        files=body.get("files_bytes"),
    )


def clean_name(name: str | None, mime_type: str) -> str:
    """The file's name as shown: its last path part, without control characters."""
    raw = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    raw = "".join(ch for ch in raw if unicodedata.category(ch)[0] != "C").strip()
    if raw in ("", ".", ".."):
        ext = {"image/jpeg": ".jpg", "image/png": ".png", "application/pdf": ".pdf"}
        return "upload" + ext.get(mime_type, "")
    return raw[:255]


async def _upload(
    service: Service,
    principal: Principal,
    request: Request,
    name: str | None,
    keep_metadata: bool,
) -> dict[str, Any]:
    settings = service.settings
    caps = await caps_of(service, principal.workspace_id)
    declared: int | None = None
    length = request.headers.get("content-length")
    if length is not None and length.isdigit():
        declared = int(length)
    if declared is not None and declared > caps.ceiling:
        raise Problem(
            "too_large",
            f"Nothing over {size_words(caps.ceiling)} is taken here, "
            f"and this one is {size_words(declared)}.",
        )
    with tempfile.TemporaryDirectory(
        prefix="chips-upload-", dir=settings.spool_dir or None
    ) as spool:
        workdir = Path(spool)
        original = workdir / "original"
        digest = hashlib.sha256()
        size = 0
        head = bytearray()
        with original.open("wb") as out:
            async for chunk in request.stream():
                size += len(chunk)
                if size > caps.ceiling:
                    raise Problem(
                        "too_large",
                        f"Nothing over {size_words(caps.ceiling)} is taken here, "
                        "and this one is larger.",
                    )
                if len(head) < HEAD_BYTES:
                    head += chunk[: HEAD_BYTES - len(head)]
                digest.update(chunk)
                out.write(chunk)
        if size == 0:
            raise Problem("invalid_request", "the upload is empty: send the file as the body")
        mime_type = sniff(bytes(head))
        why = over_cap(caps, kind_for(mime_type), size)
        if why is not None:
            raise Problem("too_large", why)
        try:
            kept = await asyncio.wait_for(
                asyncio.to_thread(
                    keep,
                    original,
                    workdir,
                    mime_type,
                    keep_metadata=keep_metadata,
                    max_pixels=settings.max_image_pixels,
                    thumbnail_px=settings.thumbnail_px,
                ),
                settings.process_timeout_seconds,
            )
        except Unacceptable as exc:
            raise Problem(exc.code, exc.message) from None
        except TimeoutError:
            raise Problem(
                "unreadable_file", "This file took too long to read, so it was not kept."
            ) from None
        except Exception:  # never a crash, never a traceback to the client
            log.exception("reading an upload failed")
            raise Problem(
                "unreadable_file", "This file could not be read, so it was not kept."
            ) from None
        sha256 = digest.hexdigest() if kept.path == original else await _sha256(kept.path)
        return await _store(service, principal, kept, sha256, name, keep_metadata)


async def _sha256(path: Path) -> str:
    def run() -> str:
        digest = hashlib.sha256()
        with path.open("rb") as fp:
            for block in iter(lambda: fp.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()

    return await asyncio.to_thread(run)


async def _store(
    service: Service,
    principal: Principal,
    kept: Kept,
    sha256: str,
    name: str | None,
    keep_metadata: bool,
) -> dict[str, Any]:
    try:
        stored = await service.blobs.put_file(blob_key(sha256), kept.path, kept.mime_type)
        if kept.thumbnail is not None:
            await service.blobs.put_file(thumb_key(sha256), kept.thumbnail, "image/jpeg")
    except Exception:
        log.exception("S3 refused an upload")
        raise Problem(
            "unavailable", "the file store is not reachable right now; send it again"
        ) from None
    byte_size = kept.path.stat().st_size
    attachment_id = new_id("att")
    row = {
        "id": attachment_id,
        "workspace_id": principal.workspace_id,
        "uploader_id": principal.participant_id,
        "credential_id": principal.credential_id,
        "name": clean_name(name, kept.mime_type),
        "mime_type": kept.mime_type,
        "kind": kept.kind,
        "byte_size": byte_size,
        "sha256": sha256,
        "width": kept.width,
        "height": kept.height,
        "duration_ms": kept.duration_ms,
        "thumbnail": kept.thumbnail is not None,
        "kept_metadata": keep_metadata,
        "created_at": datetime.now(UTC),
    }
    async with service.engine.begin() as conn:
        await conn.execute(insert(attachments).values(**row))
    return {
        "upload_id": attachment_id,
        "attachment_id": attachment_id,
        "name": row["name"],
        "mime_type": kept.mime_type,
        "kind": kept.kind,
        "byte_size": byte_size,
        "sha256": sha256,
        "width": kept.width,
        "height": kept.height,
        "duration_ms": kept.duration_ms,
        "thumbnail": kept.thumbnail is not None,
        "metadata_stripped": kept.stripped,
        "stored": stored,
    }


_ID = re.compile(r"^att_[0-9A-Za-z]{1,40}$")


async def _fetch(
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
        row = (
            await conn.execute(select(attachments).where(attachments.c.id == attachment_id))
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
        principal = await _caller(service, authorization)
    if principal.workspace_id != row.workspace_id:
        raise Problem("not_found", "no such file")
    if row.space_id is None:
        if principal.participant_id != row.uploader_id:  # an upload not posted is its sender's
            raise Problem("not_found", "no such file")
    else:
        message_id = await _check_room(service, row, principal)
        if principal.kind == "harness":
            await _audit(service, row, principal, message_id, thumbnail)
    if thumbnail and not row.thumbnail:
        raise Problem("not_found", "this file has no thumbnail")
    key = thumb_key(row.sha256) if thumbnail else blob_key(row.sha256)
    opened = await service.blobs.open(key)
    if opened is None:
        raise Problem("not_found", "no such file")
    size, chunks = opened
    return StreamingResponse(chunks, headers=_headers(row, size, thumbnail))


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
    event: dict[str, Any] = {
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
