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
import tempfile
import unicodedata
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, TypedDict

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import JSONResponse, Response
from sqlalchemy import and_, insert, select

from chips_attachments.fetching import fetch_file
from chips_attachments.media import HEAD_BYTES, Kept, Unacceptable, keep, kind_for, sniff
from chips_attachments.service import Problem, Service, caller, problem_response
from chips_attachments.store import blob_key, thumb_key
from chips_common.db import tables as t
from chips_common.db.attachment_tables import attachments
from chips_common.db.principals import Principal
from chips_common.ids import new_id
from chips_common.rules.files import Caps, FileKind, over_cap, size_words

log = logging.getLogger(__name__)


class Stored(TypedDict):
    """An upload as stored, as ``POST /v1/uploads`` answers it (the gateway's document
    calls it ``Upload``)."""

    upload_id: str
    attachment_id: str
    name: str
    mime_type: str
    kind: FileKind
    byte_size: int
    sha256: str
    width: int | None
    height: int | None
    duration_ms: int | None
    thumbnail: bool
    metadata_stripped: bool
    stored: bool


def build_router(service: Service) -> APIRouter:
    router = APIRouter(prefix="/v1")

    @router.post("/uploads")
    async def upload(
        request: Request,
        name: Annotated[str | None, Query(max_length=255)] = None,
        keep_metadata: bool = False,
        voice_note: bool = False,
        authorization: Annotated[str | None, Header()] = None,
    ) -> JSONResponse:
        try:
            principal = await caller(service, authorization)
            return JSONResponse(
                await _upload(service, principal, request, name, keep_metadata, voice_note),
                status_code=201,
            )
        except Problem as exc:
            return problem_response(exc)

    @router.get("/uploads/caps")
    async def caps(authorization: Annotated[str | None, Header()] = None) -> JSONResponse:
        try:
            principal = await caller(service, authorization)
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
            return await fetch_file(service, attachment_id, exp, tok, sig, authorization, thumbnail)
        except Problem as exc:
            return problem_response(exc)

    return router


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
        ext = {
            "image/jpeg": ".jpg",
            "image/png": ".png",
            "application/pdf": ".pdf",
            "audio/wav": ".wav",
            "audio/webm": ".webm",
            "audio/ogg": ".ogg",
        }
        return "upload" + ext.get(mime_type, "")
    return raw[:255]


async def _upload(
    service: Service,
    principal: Principal,
    request: Request,
    name: str | None,
    keep_metadata: bool,
    voice_note: bool = False,
) -> Stored:
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
        # A voice note counts as a file (docs/product/messages.md, Attachments).
        why = over_cap(caps, "voice_note" if voice_note else kind_for(mime_type), size)
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
                    voice_note=voice_note,
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
) -> Stored:
    try:
        stored = await service.blobs.put_file(blob_key(sha256), kept.path, kept.mime_type)
        if kept.thumbnail is not None:
            await service.blobs.put_file(thumb_key(sha256), kept.thumbnail, "image/jpeg")
    except Exception as exc:
        log.warning("S3 did not take an upload: %r", exc)
        raise Problem(
            "unavailable",
            "the file store is not reachable right now; send the file again in a moment",
        ) from None
    byte_size = kept.path.stat().st_size
    attachment_id = new_id("att")
    name = clean_name(name, kept.mime_type)
    row = {
        "id": attachment_id,
        "workspace_id": principal.workspace_id,
        "uploader_id": principal.participant_id,
        "credential_id": principal.credential_id,
        "name": name,
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
        "name": name,
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
