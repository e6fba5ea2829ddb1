"""What an upload's bytes are, and what is kept of them (docs/product/messages.md, Attachments).

The type is sniffed from the bytes, never from the name or what the client said. A
picture in one of the decoded formats is opened with limits (its pixel count is read
from its header and refused over the limit before anything is decompressed), decoded
whole (a truncated or malformed one is refused), turned upright by its orientation and
written again without its metadata (EXIF, GPS, maker notes, XMP, comments) unless the
person keeps it; a thumbnail is made from it. A video is measured from its container's
headers (``video.py``). Everything here is blocking, for a
worker thread, and works on files on disk.
"""

from __future__ import annotations

import struct
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import filetype
from PIL import Image, ImageFile, ImageOps

from chips_attachments.video import measure
from chips_attachments.voice import NotARecording, recording
from chips_common.rules.files import FileKind, kind_of

# The formats decoded here: a picture in any other format is kept as a plain file.
PICTURE_FORMATS = {
    "image/jpeg": "JPEG",
    "image/png": "PNG",
    "image/gif": "GIF",
    "image/webp": "WEBP",
}
VIDEO_TYPES = frozenset({"video/mp4", "video/quicktime", "video/webm", "video/x-matroska"})
HEAD_BYTES = 8192
_SCRIPTABLE = (b"<!doctype html", b"<html", b"<head", b"<body", b"<script", b"<iframe", b"<meta")

ImageFile.LOAD_TRUNCATED_IMAGES = False


class Unacceptable(Exception):
    """Bytes Chips will not keep, with the sentence the person is told."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Kept:
    """What is stored of an upload."""

    path: Path
    mime_type: str
    kind: FileKind
    width: int | None = None
    height: int | None = None
    duration_ms: int | None = None
    thumbnail: Path | None = None
    stripped: bool = False


def sniff(head: bytes) -> str:
    """The MIME type the first bytes say, whatever the file was called."""
    guessed = filetype.guess_mime(head)
    if guessed:
        return str(guessed)
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()[:2048].lower()
    if b"<svg" in text:
        return "image/svg+xml"
    if any(tag in text for tag in _SCRIPTABLE):
        return "text/html"
    if text.startswith(b"<?xml"):
        return "application/xml"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A character cut at the end of the sniffed head is still text.
        if exc.start < len(head) - 4 or b"\x00" in head:
            return "application/octet-stream"
    if b"\x00" in head:
        return "application/octet-stream"
    return "text/plain"


def kind_for(mime_type: str) -> FileKind:
    """A photo is a picture Chips decodes; any other picture is a plain file."""
    if mime_type.startswith("image/") and mime_type not in PICTURE_FORMATS:
        return "file"
    return kind_of(mime_type)


def keep(
    original: Path,
    workdir: Path,
    mime_type: str,
    *,
    keep_metadata: bool,
    max_pixels: int,
    thumbnail_px: int,
    voice_note: bool = False,
) -> Kept:
    """Decide what is stored of the upload at ``original``; raise Unacceptable if nothing.

    A voice note is a recording, measured from its headers (``voice.py``), and kept as
    uploaded; bytes posted as one that are not a recording are refused.
    """
    if voice_note:
        try:
            found = recording(original, mime_type)
        except NotARecording:
            raise Unacceptable(
                "not_a_recording",
                f"A voice note is a recording, and this file is {mime_type}.",
            ) from None
        return Kept(original, found.mime_type, "voice_note", duration_ms=found.duration_ms)
    kind = kind_for(mime_type)
    if mime_type in PICTURE_FORMATS:
        return _picture(original, workdir, mime_type, keep_metadata, max_pixels, thumbnail_px)
    if mime_type in VIDEO_TYPES:
        # Measured from the container's headers, never decoded (ADR 0050).
        with original.open("rb") as fp:
            facts = measure(fp, mime_type)
        return Kept(original, mime_type, kind, facts.width, facts.height, facts.duration_ms)
    return Kept(original, mime_type, kind)


def _picture(
    original: Path,
    workdir: Path,
    mime_type: str,
    keep_metadata: bool,
    max_pixels: int,
    thumbnail_px: int,
) -> Kept:
    fmt = PICTURE_FORMATS[mime_type]
    # Pillow's own guard only runs when a file is opened, as the check below does, which
    # also says the picture's size.
    Image.MAX_IMAGE_PIXELS = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(original, formats=[fmt]) as im:
                width, height = im.size
                if width * height > max_pixels:
                    raise Unacceptable(
                        "image_too_large",
                        f"This picture is {width:,} × {height:,} pixels; pictures here are "
                        f"at most {max_pixels:,} pixels.",
                    )
                frames = getattr(im, "n_frames", 1)
                if frames * width * height > max_pixels * 4:
                    raise Unacceptable(
                        "image_too_large", "This animation has too many frames for its size."
                    )
                im.load()
                turned = im.getexif().get(0x0112, 1) not in (1, None)
                upright = (ImageOps.exif_transpose(im) or im) if turned else im
                stored = original
                stripped = False
                if not keep_metadata and frames == 1:
                    stored = workdir / "stripped"
                    _save_clean(upright, stored, fmt)
                    stripped = True
                elif turned and frames == 1:
                    # Kept metadata still shows upright: the picture is turned, not tagged.
                    stored = workdir / "upright"
                    _save_clean(upright, stored, fmt, exif=_exif_without_orientation(im))
                thumb = workdir / "thumbnail"
                _thumbnail(upright, thumb, thumbnail_px)
                width, height = upright.size
    except Unacceptable:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise Unacceptable(
            "image_too_large", f"This picture has more than {max_pixels:,} pixels."
        ) from None
    except (OSError, SyntaxError, ValueError, EOFError, struct.error, MemoryError) as exc:
        raise Unacceptable(
            "unreadable_file",
            f"This {fmt} picture is damaged or cut short, so it was not kept ({_reason(exc)}).",
        ) from None
    return Kept(
        stored,
        mime_type,
        "photo",
        width=width,
        height=height,
        thumbnail=thumb,
        stripped=stripped,
    )


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text[:120]


def _exif_without_orientation(im: Image.Image) -> bytes:
    exif = im.getexif()
    exif.pop(0x0112, None)
    return exif.tobytes()


class SaveOptions(TypedDict, total=False):
    """What Pillow's ``Image.save`` is told beside the format."""

    icc_profile: bytes
    exif: bytes
    quality: int
    optimize: bool
    transparency: int | bytes | tuple[int, ...]


def _save_clean(im: Image.Image, path: Path, fmt: str, exif: bytes | None = None) -> None:
    """Write the pixels again with none of the original's metadata but its colour profile."""
    clean = im.copy()
    icc = im.info.get("icc_profile")
    transparency = im.info.get("transparency")
    clean.info = {}
    params: SaveOptions = {}
    if icc:
        params["icc_profile"] = icc
    if exif:
        params["exif"] = exif
    if fmt == "JPEG":
        if clean.mode not in ("RGB", "L", "CMYK"):
            clean = clean.convert("RGB")
        params["quality"], params["optimize"] = 92, False
    elif fmt == "PNG":
        if transparency is not None:
            params["transparency"] = transparency
    elif fmt == "WEBP":
        params["quality"] = 92
    elif fmt == "GIF" and transparency is not None:
        params["transparency"] = transparency
    clean.save(path, format=fmt, **params)


def _thumbnail(im: Image.Image, path: Path, size: int) -> None:
    thumb = im.copy()
    thumb.thumbnail((size, size))
    if thumb.mode in ("RGBA", "LA", "P"):
        thumb = thumb.convert("RGBA")
        flat = Image.new("RGB", thumb.size, (255, 255, 255))
        flat.paste(thumb, mask=thumb.getchannel("A"))
        thumb = flat
    elif thumb.mode != "RGB":
        thumb = thumb.convert("RGB")
    thumb.save(path, format="JPEG", quality=80)
