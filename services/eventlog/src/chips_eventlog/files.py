"""The rules at the door for files (spec/messages.md, Attachments; spec/websocket.md, The
room's files).

A ``message.post`` with ``upload_ids``, or a card naming files in its file fields
(``CARD_FILE_FIELDS``: an artifact's ``upload_id``, a receipt's, task's, hand-off's or
summary's ``upload_ids``), posts the sender's own uploads, each once, into a room the
sender is in (checked first, by the caller); the door fills in ``attachments``
from what the attachments service stored, and gives each file its version among the
room's files of its name, refusing the whole post as ``stale_file`` when it was made from
a version that is no longer the current one. The caps an owner or admin sets, and the
fetch audit the attachments service writes, are decided here too.

Door state: the ``attachments`` table. Its rows are written by the attachments service
when an upload is stored and never change after that, until the door gives one its room,
seq and version. The deciding is pure (:func:`plan_post` over a :class:`FilesView`);
every read of the table is in :func:`read_view`, and every write in :func:`apply_post`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from sqlalchemy import and_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from chips_common.append import Actor
from chips_common.db import tables as t
from chips_common.db.attachment_tables import attachments
from chips_common.events import AttachmentCapsSet, AttachmentFetched, MessagePost
from chips_common.events.messages import CARD_FILE_FIELDS
from chips_common.rules.files import Stale, Version, next_version

if TYPE_CHECKING:
    from chips_eventlog.door import Door


def _refuse(code: str, message: str, field: str | None = None) -> NoReturn:
    from chips_eventlog.door import Refused

    raise Refused(code, message, field)


@dataclass(frozen=True)
class Upload:
    id: str
    uploader_id: str
    name: str
    mime_type: str
    kind: str
    byte_size: int
    sha256: str
    width: int | None = None
    height: int | None = None
    duration_ms: int | None = None
    thumbnail: bool = False
    posted: bool = False


@dataclass(frozen=True)
class FilesView:
    """What a post's files are decided against: the uploads it names, and for each of
    their names in its room the current version and the ids of every version."""

    uploads: dict[str, Upload] = field(default_factory=dict)
    versions: dict[str, tuple[Version | None, frozenset[str]]] = field(default_factory=dict)


@dataclass(frozen=True)
class Planned:
    """A post's files as decided, before anything is written."""

    space_id: str
    seq: int
    rows: list[tuple[Upload, int, str | None]]


# --- which uploads a post names ---------------------------------------------------------

MAX_FILES = 20


def named_uploads(body: MessagePost) -> list[tuple[str, str]]:
    """Every upload a post names, in order, each with the field that named it.

    ``upload_ids`` first, then the card's file field. A card may point at a file the post
    also carries in ``upload_ids`` (it is one file); any other repeat is left in, for
    :func:`upload_ids_of` to refuse. Pure.
    """
    named = [(upload_id, "upload_ids") for upload_id in body.upload_ids or []]
    field_name = CARD_FILE_FIELDS.get(body.kind)
    card = getattr(body, body.kind, None) if field_name else None
    if card is not None and field_name is not None:
        value = getattr(card, field_name)
        given = [value] if isinstance(value, str) else list(value or [])
        carried = set(body.upload_ids or [])
        named += [(i, f"{body.kind}.{field_name}") for i in given if i not in carried]
    return named


def upload_ids_of(body: MessagePost) -> list[str]:
    """The uploads a post posts: each once, at most twenty; or a refusal. Pure."""
    named = named_uploads(body)
    seen: set[str] = set()
    for upload_id, where in named:
        if upload_id in seen:
            _refuse("invalid_event", "an upload is posted once", where)
        seen.add(upload_id)
    if len(named) > MAX_FILES:
        _refuse("invalid_event", f"a post carries at most {MAX_FILES} files", named[-1][1])
    return [upload_id for upload_id, _ in named]


def _field_of(body: MessagePost, upload_id: str) -> str:
    return next((where for i, where in named_uploads(body) if i == upload_id), "upload_ids")


# --- reading -------------------------------------------------------------------------


async def read_view(conn: AsyncConnection, workspace_id: str, body: MessagePost) -> FilesView:
    """The uploads a post names (as this transaction sees them), and their names' versions."""
    ids = list(dict.fromkeys(i for i, _ in named_uploads(body)))
    if not ids:
        return FilesView()
    a, p = attachments.c, t.participants.c
    rows = await conn.execute(
        select(attachments).where(and_(a.id.in_(ids), a.workspace_id == workspace_id))
    )
    uploads = {
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
            r.posted_seq is not None,
        )
        for r in rows
    }
    versions: dict[str, tuple[Version | None, frozenset[str]]] = {}
    for name in sorted({u.name for u in uploads.values()}):
        found = (
            await conn.execute(
                select(a.id, a.version, a.sha256, p.name.label("by_name"))
                .select_from(attachments.outerjoin(t.participants, p.id == a.uploader_id))
                .where(
                    and_(
                        a.workspace_id == workspace_id,
                        a.space_id == body.space_id,
                        a.name == name,
                        a.posted_seq.is_not(None),
                    )
                )
                .order_by(a.posted_seq.desc(), a.version.desc())
            )
        ).all()
        current = (
            Version(found[0].id, found[0].version, found[0].sha256, found[0].by_name or "somebody")
            if found
            else None
        )
        versions[name] = (current, frozenset(r.id for r in found))
    return FilesView(uploads, versions)


# --- deciding ------------------------------------------------------------------------


def plan_post(view: FilesView, body: MessagePost, actor_id: str, seq: int) -> Planned | None:
    """Decide a post's files, or refuse it. Pure: nothing is read or written here."""
    if body.attachments is not None:
        _refuse(
            "invalid_event", "attachments are filled in by Chips from upload_ids", "attachments"
        )
    replaces = body.replaces or {}
    ids = upload_ids_of(body)
    if replaces and not set(replaces) <= set(ids):
        _refuse("invalid_event", "replaces names an upload this post does not carry", "replaces")
    if not ids:
        return None
    for upload_id in ids:
        upload = view.uploads.get(upload_id)
        where = _field_of(body, upload_id)
        if upload is None:
            _refuse("not_found", f"no upload {upload_id}", where)
        if upload.uploader_id != actor_id:
            _refuse("forbidden", "a post carries only its sender's own uploads", where)
        if upload.posted:
            _refuse("invalid_event", f"upload {upload_id} was posted already", where)
    rows: list[tuple[Upload, int, str | None]] = []
    # Two files of one name in one post: the second is the next version of the first.
    earlier: dict[str, Version] = {}
    for upload_id in ids:
        upload = view.uploads[upload_id]
        current, versions = view.versions.get(upload.name, (None, frozenset()))
        current = earlier.get(upload.name, current)
        # websocket.md: "A replaces naming another file or another room's is left out."
        made_from = replaces.get(upload_id)
        if made_from not in versions:
            made_from = None
        version = next_version(upload.name, current, upload.sha256, made_from)
        if isinstance(version, Stale):
            _refuse("stale_file", version.message, "replaces")
        earlier[upload.name] = Version(upload.id, version, upload.sha256, "")
        rows.append((upload, version, made_from))
    return Planned(body.space_id, seq, rows)


def filled(planned: Planned) -> dict[str, Any]:
    """What Chips fills in: each file as stored, with its version."""
    items: list[dict[str, Any]] = []
    for upload, version, made_from in planned.rows:
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
        for extra in ("width", "height", "duration_ms"):
            if getattr(upload, extra) is not None:
                item[extra] = getattr(upload, extra)
        if made_from is not None:
            item["replaces"] = made_from
        items.append(item)
    return {"attachments": items}


# --- writing -------------------------------------------------------------------------


async def apply_post(conn: AsyncConnection, planned: Planned | None) -> dict[str, Any]:
    """Give the planned files their room, seq and version; say what Chips fills in."""
    if planned is None:
        return {}
    for upload, version, made_from in planned.rows:
        await conn.execute(
            update(attachments)
            .where(attachments.c.id == upload.id)
            .values(
                space_id=planned.space_id,
                posted_seq=planned.seq,
                version=version,
                replaces=made_from,
            )
        )
    return filled(planned)


# --- the door's entry points -----------------------------------------------------------


async def decide_post(door: Door, body: MessagePost, actor: Actor) -> Planned | None:
    """Read and decide a post's files (a stranger to the room learns nothing of them)."""
    named = named_uploads(body)
    if not named and body.attachments is None and not body.replaces:
        return None
    if named:
        await door.check_member(body.space_id, actor)
    view = await read_view(door.conn, door.workspace_id, body)
    return plan_post(view, body, actor.id, door.head_seq + 1)


def check_caps_set(role: str | None, body: AttachmentCapsSet, actor: Actor) -> dict[str, Any]:
    """An owner or admin of the workspace caps photos, videos and files (spec/messages.md)."""
    if actor.kind != "person" or role not in ("owner", "admin"):
        _refuse("forbidden", "the attachment caps are a workspace owner's or admin's")
    return {}


def check_fetched(body: AttachmentFetched, actor: Actor) -> dict[str, Any]:
    """The fetch audit is a harness's (membership is checked by the caller)."""
    if actor.kind != "harness":
        _refuse("forbidden", "only a harness's fetches are logged")
    return {}
