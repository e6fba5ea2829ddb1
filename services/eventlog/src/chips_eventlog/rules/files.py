"""The rules of files at the door (docs/product/messages.md, Attachments; docs/product/websocket.md,
The room's files).

A ``message.post`` with ``upload_ids``, or a card naming files in its file fields
(``CARD_FILE_FIELDS``: an artifact's ``upload_id``, a receipt's, task's, hand-off's or
summary's ``upload_ids``), posts the sender's own uploads, each once, into a room the
sender is in; the door fills in ``attachments`` from what the attachments service
stored, and gives each file its version among the room's files of its name, refusing the
whole post as ``stale_file`` when it was made from a version that is no longer the current
one. The caps an owner or admin sets, and the fetch audit, are decided here too.

The uploads a batch names, and the versions of their names in their rooms, are read for
the batch (``state_store.prefetch``): the attachments service writes uploads, so they are
not held in memory across batches.
"""

from __future__ import annotations

from pydantic import JsonValue

from chips_common.append import Actor
from chips_common.events import (
    AttachmentCapsSet,
    AttachmentFetched,
    AttachmentTranscribed,
    MessagePost,
)
from chips_common.events.messages import CARD_FILE_FIELDS
from chips_common.rules.files import Stale, Version, next_version
from chips_eventlog.refused import refuse
from chips_eventlog.rules.common import Ctx, check_member, harness_of, kind_of
from chips_eventlog.state import Decision, DoorState, PostFile

MAX_FILES = 20


def named_uploads(body: MessagePost) -> list[tuple[str, str]]:
    """Every upload a post names, in order, each with the field that named it.

    ``upload_ids`` first, then the card's file field. A card may point at a file the post
    also carries in ``upload_ids`` (it is one file); any other repeat is left in, for
    :func:`upload_ids_of` to refuse.
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


def named_in_raw(raw: dict[str, JsonValue]) -> list[str]:
    """The uploads an undecoded ``message.post`` names (what a batch reads ahead)."""
    ids = raw.get("upload_ids")
    named = [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []
    kind = raw.get("kind")
    field_name = CARD_FILE_FIELDS.get(kind) if isinstance(kind, str) else None
    card = raw.get(kind) if field_name and isinstance(kind, str) else None
    if isinstance(card, dict) and field_name is not None:
        value = card.get(field_name)
        given = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        named += [i for i in given if isinstance(i, str)]
    return named


def upload_ids_of(body: MessagePost) -> list[str]:
    """The uploads a post posts: each once, at most twenty; or a refusal."""
    named = named_uploads(body)
    seen: set[str] = set()
    for upload_id, where in named:
        if upload_id in seen:
            refuse("invalid_event", "an upload is posted once", where)
        seen.add(upload_id)
    if len(named) > MAX_FILES:
        refuse("invalid_event", f"a post carries at most {MAX_FILES} files", named[-1][1])
    return [upload_id for upload_id, _ in named]


def _field_of(body: MessagePost, upload_id: str) -> str:
    return next((where for i, where in named_uploads(body) if i == upload_id), "upload_ids")


def check_post_files(
    s: DoorState, body: MessagePost, actor: Actor, ctx: Ctx
) -> tuple[list[dict[str, JsonValue]] | None, list[PostFile]]:
    """Decide a post's files: what ``attachments`` it carries, and the files it posts."""
    if body.attachments is not None:
        refuse("invalid_event", "attachments are filled in by Chips from upload_ids", "attachments")
    replaces = body.replaces or {}
    ids = upload_ids_of(body)
    if replaces and not set(replaces) <= set(ids):
        refuse("invalid_event", "replaces names an upload this post does not carry", "replaces")
    if not ids:
        return None, []
    check_member(s, body.space_id, actor)  # a stranger learns nothing of uploads
    for upload_id in ids:
        upload = s.uploads.get(upload_id)
        where = _field_of(body, upload_id)
        if upload is None:
            refuse("not_found", f"no upload {upload_id}", where)
        if upload.uploader_id not in (actor.id, harness_of(actor)):
            refuse("forbidden", "a post carries only its sender's own uploads", where)
        if upload.posted:
            refuse("invalid_event", f"upload {upload_id} was posted already", where)
    posted: list[PostFile] = []
    filled: list[dict[str, JsonValue]] = []
    # Two files of one name in one post: the second is the next version of the first.
    earlier: dict[str, Version] = {}
    for upload_id in ids:
        upload = s.uploads[upload_id]
        current, versions = s.current_file(body.space_id, upload.name)
        current = earlier.get(upload.name, current)
        # docs/product/websocket.md: "A replaces naming another file or another room's is left out."
        made_from = replaces.get(upload_id)
        if made_from not in versions:
            made_from = None
        version = next_version(upload.name, current, upload.sha256, made_from)
        if isinstance(version, Stale):
            refuse("stale_file", version.message, "replaces")
        earlier[upload.name] = Version(upload.id, version, upload.sha256, "")
        posted.append(PostFile(upload.id, body.space_id, ctx.seq, version, made_from))
        item: dict[str, JsonValue] = {
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
    return filled, posted


def check_caps_set(s: DoorState, body: AttachmentCapsSet, actor: Actor, ctx: Ctx) -> Decision:
    """An owner or admin of the workspace caps photos, videos and files
    (docs/product/messages.md)."""
    me = s.participant(actor.id) if actor.kind == "person" else None
    if me is None or me.role not in ("owner", "admin"):
        refuse("forbidden", "the attachment caps are a workspace owner's or admin's")
    return Decision()


def check_fetched(s: DoorState, body: AttachmentFetched, actor: Actor, ctx: Ctx) -> Decision:
    """The fetch audit: a harness in the room fetched one of its files (a stranger to the
    room is refused as one before anything else)."""
    check_member(s, body.space_id, actor)
    if kind_of(actor) != "harness":
        refuse("forbidden", "only a harness's fetches are logged")
    return Decision()


def check_transcribed(
    s: DoorState, body: AttachmentTranscribed, actor: Actor, ctx: Ctx
) -> Decision:
    """What a voice note said is Chips's to write (the attachments service, as ``system``),
    in a room that is still there (docs/adr/0137)."""
    if actor.kind != "system":
        refuse("forbidden", "what a voice note said is written by Chips")
    if s.space(body.space_id) is None:
        refuse("not_found", "no such space", "space_id")
    if body.outcome == "words" and not (body.transcript or "").strip():
        refuse("invalid_event", "a voice note heard as words says them", "transcript")
    if body.outcome != "words" and not body.note:
        refuse("invalid_event", "a voice note with no words says why", "note")
    return Decision()
