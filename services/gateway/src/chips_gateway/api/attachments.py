"""Files over HTTP at the gateway: uploads and fetches passed through to the attachments
service, and the room's files read here (docs/adr/0043).

Clients know one address, the gateway's. It streams an upload's body on to an attachments
replica as it arrives, and a file's bytes back the same way, holding neither whole; the
attachments service decides everything (who may, what the bytes are, the signature).
A deployment with an ingress may route ``/v1/uploads`` and ``/v1/attachments/`` to the
attachments service directly instead.
"""

from __future__ import annotations

import re
import time
from typing import Annotated, Literal

import httpx
from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel
from starlette.background import BackgroundTask

from chips_common.events import JsonObject
from chips_gateway.agents import shown
from chips_gateway.context import Caller, Ctx
from chips_gateway.errors import ChipsError
from chips_gateway.files import FileLinks, current_versions, room_files
from chips_gateway.rows import RoomFiles

router = APIRouter(prefix="/v1")

# Headers a client's request carries on, and the attachments service's answer carries back.
FORWARDED = ("authorization", "content-type", "content-length")
ATTACHMENT_ID = re.compile(r"^att_[0-9A-Za-z]{1,40}$")
HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "upgrade"})


def build_client(base_url: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=base_url.rstrip("/"),
        timeout=httpx.Timeout(connect=5.0, read=120.0, write=120.0, pool=10.0),
        limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
    )


async def _pass(request: Request, method: str) -> Response:
    client: httpx.AsyncClient = request.app.state.attachments_client
    # The path and query exactly as they came, so a signed URL is checked as it was signed.
    raw_path = request.scope.get("raw_path") or request.url.path.encode()
    query = request.scope.get("query_string", b"")
    target = raw_path.decode("latin-1") + (f"?{query.decode('latin-1')}" if query else "")
    headers = {k: v for k in FORWARDED if (v := request.headers.get(k)) is not None}
    body = request.stream() if method == "POST" else None
    try:
        outgoing = client.build_request(method, target, headers=headers, content=body)
    except (httpx.InvalidURL, ValueError):
        return JSONResponse({"code": "not_found", "message": "no such file"}, status_code=404)
    try:
        upstream = await client.send(outgoing, stream=True)
    except httpx.HTTPError:
        return JSONResponse(
            {"code": "unavailable", "message": "files are not reachable right now; try again"},
            status_code=503,
        )
    answer = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP}
    return StreamingResponse(
        upstream.aiter_raw(),
        status_code=upstream.status_code,
        headers=answer,
        background=BackgroundTask(upstream.aclose),
    )


class Upload(BaseModel):
    """An upload as the attachments service stored it: post ``upload_id`` in a message's
    ``attachments`` to attach it."""

    upload_id: str
    attachment_id: str
    name: str
    mime_type: str
    kind: Literal["photo", "video", "voice_note", "file"]
    byte_size: int
    sha256: str
    width: int | None = None
    height: int | None = None
    duration_ms: int | None = None
    thumbnail: bool
    metadata_stripped: bool
    stored: bool


class UploadCaps(BaseModel):
    """The most bytes an upload may hold in this workspace: all told, and by kind."""

    ceiling_bytes: int
    photos_bytes: int
    videos_bytes: int
    files_bytes: int


BINARY: JsonObject = {"type": "string", "format": "binary"}
# A file's bytes, by a signed URL (exp, tok, sig) or with the caller's own token.
FETCH_DOC: JsonObject = {
    "parameters": [
        {"name": n, "in": "query", "required": False, "schema": {"type": "string"}}
        for n in ("exp", "tok", "sig")
    ],
    "security": [{"bearer": []}, {}],
}
FETCHED: dict[int | str, JsonObject] = {
    200: {
        "description": "the file's bytes, with its own content type",
        # Bytes for a generated client; any type, as the file is served with its own.
        "content": {"application/octet-stream": {"schema": BINARY}, "*/*": {"schema": BINARY}},
    }
}


@router.post(
    "/uploads",
    status_code=201,
    responses={201: {"model": Upload, "description": "the upload, stored"}},
    openapi_extra={
        "parameters": [
            {
                "name": "name",
                "in": "query",
                "required": False,
                "description": "the file's name as the person knows it",
                "schema": {"type": "string", "maxLength": 255},
            },
            {
                "name": "keep_metadata",
                "in": "query",
                "required": False,
                "description": "keep a photo's metadata (where and when it was taken)",
                "schema": {"type": "boolean", "default": False},
            },
            {
                "name": "voice_note",
                "in": "query",
                "required": False,
                "description": "post it as a voice note: a recording Chips transcribes once "
                "it is posted (its length is read from the file)",
                "schema": {"type": "boolean", "default": False},
            },
        ],
        "requestBody": {
            "required": True,
            "description": "the file's bytes",
            "content": {"application/octet-stream": {"schema": BINARY}},
        },
    },
)
async def upload(request: Request) -> Response:
    """An upload slot: the file's bytes are the body; answers the upload's id."""
    return await _pass(request, "POST")


@router.get("/uploads/caps", responses={200: {"model": UploadCaps, "description": "the caps"}})
async def caps(request: Request) -> Response:
    return await _pass(request, "GET")


@router.get(
    "/attachments/{attachment_id}",
    response_class=Response,
    responses=FETCHED,
    openapi_extra=FETCH_DOC,
)
async def fetch(request: Request, attachment_id: str) -> Response:
    """A file's bytes, by a signed URL or with the caller's own token."""
    if not ATTACHMENT_ID.match(attachment_id):
        return JSONResponse({"code": "not_found", "message": "no such file"}, status_code=404)
    return await _pass(request, "GET")


@router.get(
    "/attachments/{attachment_id}/thumbnail",
    response_class=Response,
    responses=FETCHED,
    openapi_extra=FETCH_DOC,
)
async def thumbnail(request: Request, attachment_id: str) -> Response:
    """A photo's thumbnail, as the file itself is fetched."""
    if not ATTACHMENT_ID.match(attachment_id):
        return JSONResponse({"code": "not_found", "message": "no such file"}, status_code=404)
    return await _pass(request, "GET")


@router.get("/spaces/{space_id}/files", response_model=None)
async def files(
    ctx: Ctx,
    caller: Caller,
    space_id: str,
    name: Annotated[str | None, Query(min_length=1, max_length=255)] = None,
) -> RoomFiles:
    """The room's files (current versions), or one name's versions, newest first."""
    if not await ctx.reader.is_member(space_id, caller.participant_id):
        raise ChipsError("forbidden", "you are not a member of this space", field="space_id")
    found = await room_files(ctx.engine, ctx.reader, caller.workspace_id, space_id, name=name)
    listed = found if name is not None else current_versions(found)
    links: FileLinks = ctx.links
    now = time.time()
    answer: RoomFiles = {
        "files": [links.link_file(item, caller.credential_id, now) for item in listed]
    }
    return await shown(ctx.reader, caller, answer)  # by: its agent is the harness (ADR 0079)
