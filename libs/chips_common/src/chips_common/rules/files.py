"""Attachments and the room's files, as pure rules (docs/product/messages.md, Attachments;
docs/product/websocket.md, The room's files).

What kind a file is, how it is served, how big it may be and what a cap refusal says,
and which version a posted file becomes. Nothing here touches a database or S3: the
attachments service and the eventlog's door call these with what they read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

FileKind = Literal["photo", "video", "voice_note", "file"]

# Shown inline: pictures Chips decoded itself, and PDFs. Anything else, and anything that
# could carry a script (HTML, SVG, XML), is a download (docs/architecture/design.md §6).
INLINE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp", "application/pdf"})

# Audio counts as a file (docs/product/messages.md, Attachments): a voice note too.
KIND_WORDS: dict[FileKind, str] = {
    "photo": "Photos",
    "video": "Videos",
    "voice_note": "Files",
    "file": "Files",
}


def kind_of(mime_type: str) -> FileKind:
    """A picture is a photo, a moving picture a video; audio and the rest are files."""
    if mime_type.startswith("image/") and mime_type != "image/svg+xml":
        return "photo"
    if mime_type.startswith("video/"):
        return "video"
    return "file"


def disposition_for(mime_type: str) -> Literal["inline", "attachment"]:
    return "inline" if mime_type in INLINE_TYPES else "attachment"


def size_words(byte_size: int) -> str:
    """``62.3 MB``, ``50 MB``, ``800 KB``: decimal units, at most one decimal."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if byte_size >= scale:
            value = round(byte_size / scale, 1)
            return f"{value:g} {unit}"
    return f"{byte_size} bytes"


@dataclass(frozen=True)
class Caps:
    """The workspace's caps per kind (None: only the ceiling), under the server's ceiling."""

    ceiling: int
    photos: int | None = None
    videos: int | None = None
    files: int | None = None

    def cap_for(self, kind: FileKind) -> int:
        own = {
            "photo": self.photos,
            "video": self.videos,
            "voice_note": self.files,
            "file": self.files,
        }[kind]
        return self.ceiling if own is None else min(own, self.ceiling)


def over_cap(caps: Caps, kind: FileKind, byte_size: int) -> str | None:
    """The refusal's sentence when a file is over its kind's cap, else None.

    docs/product/messages.md: "Videos here are capped at 50 MB, and this one is 62.3 MB."
    """
    cap = caps.cap_for(kind)
    if byte_size <= cap:
        return None
    words, size = KIND_WORDS[kind], size_words(byte_size)
    return f"{words} here are capped at {size_words(cap)}, and this one is {size}."


@dataclass(frozen=True)
class Version:
    """The current version of one name in a room."""

    attachment_id: str
    version: int
    sha256: str
    by_name: str


@dataclass(frozen=True)
class Stale:
    """A post made from a version that is no longer the current one."""

    message: str


def next_version(
    name: str, current: Version | None, sha256: str, replaces: str | None
) -> int | Stale:
    """The version a posted file becomes, or why the post is stale.

    docs/product/websocket.md, The room's files: each change of a file's bytes is the next
    version; bytes that are the current version's are never stale; a post that says it
    replaces a version other than the current one is refused. ``replaces`` is only
    passed when it names a version of this very name in this room (anything else is left
    out by the caller).
    """
    if current is None:
        return 1
    if sha256 == current.sha256:
        return current.version
    if replaces is not None and replaces != current.attachment_id:
        return Stale(f"{name} is now v{current.version}, by {current.by_name}. Fetch it and redo.")
    return current.version + 1
