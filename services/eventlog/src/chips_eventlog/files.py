"""The rules at the door for files (spec/messages.md, Attachments; spec/websocket.md, The
room's files).

A ``message.post`` with ``upload_ids`` posts the sender's own uploads, each once, into a
room the sender is in (membership is checked first, by the post's own rule); the door
fills in ``attachments`` from what the attachments service stored, and gives each file
its version among the room's files of its name, refusing the whole post as
``stale_file`` when it was made from a version that is no longer the current one. The
caps an owner or admin sets, and the fetch audit the attachments service writes, are
decided here too.

Door state: the ``attachments`` table. Its rows are written by the attachments service
when an upload is stored and never change after that, until the door gives one its room,
seq and version here. Every read of it is in the two functions under "reading".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, select, update

from chips_common.append import Actor
from chips_common.db import tables as t
from chips_common.db.attachment_tables import attachments
from chips_common.events import AttachmentCapsSet, AttachmentFetched, MessagePost
from chips_common.rules.files import Stale, Version, next_version

if TYPE_CHECKING:
    from chips_eventlog.door import Door


def _refused(code: str, message: str, field: str | None = None) -> Exception:
    from chips_eventlog.door import Refused

    return Refused(code, message, field)


@dataclass(frozen=True)
class Upload:
    id: str
    uploader_id: str
    name: str
    mime_type: str
    kind: str
    byte_size: int
    sha256: str
    width: int | None
    height: int | None
    duration_ms: int | None
    thumbnail: bool
    space_id: str | None
    posted: bool


# --- reading -------------------------------------------------------------------------


async def read_uploads(door: Door, ids: list[str]) -> dict[str, Upload]:
    """The uploads ``ids`` name in this workspace (as this transaction sees them)."""
    a = attachments.c
    rows = await door.conn.execute(
        select(attachments).where(and_(a.id.in_(ids), a.workspace_id == door.workspace_id))
    )
    return {
        r.id: Upload(
            r.id,
            r.uploader_id,
            r.name,
            r.mime_type,
            r.kind,
            r.byte_size,
            r.sha256,
            r.width,
            r.height,
            r.duration_ms,
            r.thumbnail,
            r.space_id,
            r.posted_seq is not None,
        )
        for r in rows
    }


async def read_current(door: Door, space_id: str, name: str) -> tuple[Version | None, set[str]]:
    """The current version of ``name`` in the room, and the ids of all its versions."""
    a, p = attachments.c, t.participants.c
    rows = (
        await door.conn.execute(
            select(a.id, a.version, a.sha256, p.name.label("by_name"))
            .select_from(attachments.outerjoin(t.participants, p.id == a.uploader_id))
            .where(
                and_(
                    a.workspace_id == door.workspace_id,
                    a.space_id == space_id,
                    a.name == name,
                    a.posted_seq.is_not(None),
                )
            )
            .order_by(a.posted_seq.desc(), a.version.desc())
        )
    ).all()
    if not rows:
        return None, set()
    top = rows[0]
    current = Version(top.id, top.version, top.sha256, top.by_name or "somebody")
    return current, {r.id for r in rows}


# --- the rules -----------------------------------------------------------------------


@dataclass(frozen=True)
class Planned:
    """A post's files as decided, before anything is written."""

    space_id: str
    seq: int
    rows: list[tuple[Upload, int, str | None]]


async def plan_post(door: Door, body: MessagePost, actor: Actor) -> Planned | None:
    """Decide a post's files: every refusal comes here, before anything is written.

    A single event is appended without a savepoint (every rule decides before its own
    writes), so nothing may be written until every file of the post is let in.
    """
    if body.attachments is not None:
        raise _refused(
            "invalid_event", "attachments are filled in by Chips from upload_ids", "attachments"
        )
    replaces = body.replaces or {}
    ids = body.upload_ids or []
    if replaces and not set(replaces) <= set(ids):
        raise _refused(
            "invalid_event", "replaces names an upload this post does not carry", "replaces"
        )
    if not ids:
        return None
    await door.check_member(body.space_id, actor)  # a stranger learns nothing of uploads
    if len(set(ids)) != len(ids):
        raise _refused("invalid_event", "an upload is posted once", "upload_ids")
    uploads = await read_uploads(door, ids)
    for upload_id in ids:
        upload = uploads.get(upload_id)
        if upload is None:
            raise _refused("not_found", f"no upload {upload_id}", "upload_ids")
        if upload.uploader_id != actor.id:
            raise _refused(
                "forbidden", "a post carries only its sender's own uploads", "upload_ids"
            )
        if upload.posted:
            raise _refused("invalid_event", f"upload {upload_id} was posted already", "upload_ids")
    rows: list[tuple[Upload, int, str | None]] = []
    # Two files of one name in one post: the second is the next version of the first.
    earlier: dict[str, Version] = {}
    for upload_id in ids:
        upload = uploads[upload_id]
        current, versions = await read_current(door, body.space_id, upload.name)
        current = earlier.get(upload.name, current)
        # websocket.md: "A replaces naming another file or another room's is left out."
        made_from = replaces.get(upload_id)
        if made_from not in versions:
            made_from = None
        version = next_version(upload.name, current, upload.sha256, made_from)
        if isinstance(version, Stale):
            raise _refused("stale_file", version.message, "replaces")
        earlier[upload.name] = Version(upload.id, version, upload.sha256, "")
        rows.append((upload, version, made_from))
    return Planned(body.space_id, door.head_seq + 1, rows)


async def apply_post(door: Door, planned: Planned | None) -> dict[str, Any]:
    """Write the planned files' room, seq and version, and say what Chips fills in."""
    if planned is None:
        return {}
    filled: list[dict[str, Any]] = []
    for upload, version, made_from in planned.rows:
        await door.conn.execute(
            update(attachments)
            .where(attachments.c.id == upload.id)
            .values(
                space_id=planned.space_id,
                posted_seq=planned.seq,
                version=version,
                replaces=made_from,
            )
        )
        item: dict[str, Any] = {
            "attachment_id": upload.id,
            "name": upload.name,
            "mime_type": upload.mime_type,
            "kind": upload.kind,
            "byte_size": upload.byte_size,
            "sha256": upload.sha256,
            "version": version,
            "thumbnail": upload.thumbnail,
        }
        for field in ("width", "height", "duration_ms"):
            if getattr(upload, field) is not None:
                item[field] = getattr(upload, field)
        if made_from is not None:
            item["replaces"] = made_from
        filled.append(item)
    return {"attachments": filled}


async def check_caps_set(door: Door, body: AttachmentCapsSet, actor: Actor) -> dict[str, Any]:
    """An owner or admin of the workspace caps photos, videos and files (spec/messages.md)."""
    me = await door.participant(actor.id) if actor.kind == "person" else None
    if me is None or me.role not in ("owner", "admin"):
        raise _refused("forbidden", "the attachment caps are a workspace owner's or admin's")
    return {}


async def check_fetched(door: Door, body: AttachmentFetched, actor: Actor) -> dict[str, Any]:
    """The fetch audit: a harness in the room fetched one of its files."""
    if actor.kind != "harness":
        raise _refused("forbidden", "only a harness's fetches are logged")
    await door.check_member(body.space_id, actor)
    return {}
