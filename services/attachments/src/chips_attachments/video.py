"""A video's width, height and duration, read from its container's headers (ADR 0050).

Nothing is decoded: MP4 and QuickTime say their duration in the movie header (``mvhd``)
and each track's size in its track header (``tkhd``); WebM and Matroska say theirs in the
segment's ``Info`` and ``Tracks`` elements, which come before the first cluster. Only box
and element headers and a few fixed-size fields are read, with a bound on how many are
looked at, so a video of any length is measured in the same few reads and in constant
memory, and a malformed one is measured as far as it can be (what cannot be read is
``None``) and never refused for it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

# How many boxes or elements are looked at on one level before giving up: real files
# have a handful; a file made to make a reader walk forever stops here.
LIMIT = 256
# A value read whole (a number) is at most this long; anything longer is skipped.
MAX_VALUE = 8


@dataclass(frozen=True)
class VideoFacts:
    width: int | None = None
    height: int | None = None
    duration_ms: int | None = None


def measure(fp: BinaryIO, mime_type: str) -> VideoFacts:
    """What the container at ``fp`` says of its picture size and length."""
    try:
        if mime_type in ("video/webm", "video/x-matroska"):
            return _matroska(fp)
        return _quicktime(fp)
    except (OSError, struct.error, IndexError, ValueError, OverflowError):
        return VideoFacts()


# --- MP4 and QuickTime (ISO base media file format) -----------------------------------


def _boxes(fp: BinaryIO, start: int, end: int | None) -> Iterator[tuple[bytes, int, int]]:
    """Each box between start and end: its type, where its content starts and its end."""
    pos = start
    for _ in range(LIMIT):
        if end is not None and pos + 8 > end:
            return
        fp.seek(pos)
        header = fp.read(8)
        if len(header) < 8:
            return
        size, kind = struct.unpack(">I4s", header)
        content = pos + 8
        if size == 1:
            large = fp.read(8)
            if len(large) < 8:
                return
            size = struct.unpack(">Q", large)[0]
            content = pos + 16
        elif size == 0:  # to the end of the file
            fp.seek(0, 2)
            size = fp.tell() - pos
        if size < content - pos:
            return
        yield kind, content, pos + size
        pos += size


def _child(fp: BinaryIO, start: int, end: int | None, name: bytes) -> tuple[int, int] | None:
    for kind, content, stop in _boxes(fp, start, end):
        if kind == name:
            return content, stop
    return None


def _quicktime(fp: BinaryIO) -> VideoFacts:
    moov = _child(fp, 0, None, b"moov")
    if moov is None:
        return VideoFacts()
    duration_ms = _mvhd_duration_ms(fp, *moov)
    width = height = None
    for kind, content, stop in _boxes(fp, *moov):
        if kind != b"trak":
            continue
        size = _tkhd_size(fp, content, stop)
        if size is None:
            continue
        if _handler(fp, content, stop) == b"vide":
            width, height = size
            break
        if width is None and size != (0, 0):  # no handler said: the first track with a size
            width, height = size
    return VideoFacts(width, height, duration_ms)


def _mvhd_duration_ms(fp: BinaryIO, start: int, end: int) -> int | None:
    mvhd = _child(fp, start, end, b"mvhd")
    if mvhd is None:
        return None
    fp.seek(mvhd[0])
    version = fp.read(1)[0]
    fp.seek(mvhd[0] + 4)
    if version == 1:
        _, _, timescale, duration = struct.unpack(">QQIQ", fp.read(28))
    else:
        _, _, timescale, duration = struct.unpack(">IIII", fp.read(16))
    if not timescale:
        return None
    return int(duration * 1000 // timescale)


def _tkhd_size(fp: BinaryIO, start: int, end: int) -> tuple[int, int] | None:
    """The track's size as it shows: turned a quarter, its width and height swap."""
    tkhd = _child(fp, start, end, b"tkhd")
    if tkhd is None:
        return None
    fp.seek(tkhd[0])
    version = fp.read(1)[0]
    # flags, times, track id, duration (longer in version 1), then layer … volume.
    matrix_at = tkhd[0] + (4 + 8 + 8 + 4 + 4 + 8 + 8 + 8 if version == 1 else 4 + 4 * 5 + 8 + 8)
    fp.seek(matrix_at)
    data = fp.read(36 + 8)
    if len(data) < 44:
        return None
    matrix = struct.unpack(">9i", data[:36])
    width, height = (v >> 16 for v in struct.unpack(">II", data[36:]))
    if matrix[0] == 0 and matrix[4] == 0 and matrix[1] != 0:  # 90° or 270°
        width, height = height, width
    return width, height


def _handler(fp: BinaryIO, start: int, end: int) -> bytes | None:
    mdia = _child(fp, start, end, b"mdia")
    if mdia is None:
        return None
    hdlr = _child(fp, *mdia, b"hdlr")
    if hdlr is None:
        return None
    fp.seek(hdlr[0] + 8)
    return fp.read(4)


# --- WebM and Matroska (EBML) ----------------------------------------------------------

SEGMENT, CLUSTER = 0x18538067, 0x1F43B675
INFO, TIMECODE_SCALE, DURATION = 0x1549A966, 0x2AD7B1, 0x4489
TRACKS, TRACK_ENTRY, TRACK_TYPE, VIDEO = 0x1654AE6B, 0xAE, 0x83, 0xE0
PIXEL_WIDTH, PIXEL_HEIGHT, DISPLAY_WIDTH, DISPLAY_HEIGHT = 0xB0, 0xBA, 0x54B0, 0x54BA


def _vint(fp: BinaryIO, marker: bool) -> int | None:
    """An EBML variable-length integer: an id keeps its marker bit, a size loses it.

    An unknown size (every bit set) is -1.
    """
    first = fp.read(1)
    if not first or first[0] == 0:
        return None
    length = 9 - first[0].bit_length()
    rest = fp.read(length - 1)
    if len(rest) < length - 1:
        return None
    value = first[0] if marker else first[0] & ((1 << (8 - length)) - 1)
    for byte in rest:
        value = value << 8 | byte
    if not marker and value == (1 << (7 * length)) - 1:
        return -1
    return value


def _elements(fp: BinaryIO, start: int, end: int | None) -> Iterator[tuple[int, int, int | None]]:
    """Each element between start and end: its id, where its content starts, its end."""
    pos = start
    for _ in range(LIMIT):
        if end is not None and pos >= end:
            return
        fp.seek(pos)
        eid = _vint(fp, marker=True)
        size = _vint(fp, marker=False)
        if eid is None or size is None:
            return
        content = fp.tell()
        stop = end if size == -1 else content + size
        yield eid, content, stop
        if stop is None:  # of unknown size to the end: nothing follows it here
            return
        pos = stop


def _uint(fp: BinaryIO, start: int, end: int | None) -> int | None:
    if end is None or not 0 < end - start <= MAX_VALUE:
        return None
    fp.seek(start)
    return int.from_bytes(fp.read(end - start), "big")


def _float(fp: BinaryIO, start: int, end: int | None) -> float | None:
    if end is None or end - start not in (4, 8):
        return None
    fp.seek(start)
    return float(struct.unpack(">f" if end - start == 4 else ">d", fp.read(end - start))[0])


def _matroska(fp: BinaryIO) -> VideoFacts:
    segment = next(((c, e) for i, c, e in _elements(fp, 0, None) if i == SEGMENT), None)
    if segment is None:
        return VideoFacts()
    scale, duration = 1_000_000, None  # nanoseconds a tick, by default
    width = height = None
    for eid, content, stop in _elements(fp, *segment):
        if eid == CLUSTER:  # the frames: Info and Tracks came before them
            break
        if eid == INFO:
            for sub, c, e in _elements(fp, content, stop):
                if sub == TIMECODE_SCALE:
                    scale = _uint(fp, c, e) or scale
                elif sub == DURATION:
                    duration = _float(fp, c, e)
        elif eid == TRACKS and width is None:
            width, height = _matroska_video_size(fp, content, stop)
    duration_ms = None
    if duration is not None and duration >= 0:
        duration_ms = int(duration * scale // 1_000_000)
    return VideoFacts(width, height, duration_ms)


def _matroska_video_size(
    fp: BinaryIO, start: int, end: int | None
) -> tuple[int | None, int | None]:
    for eid, content, stop in _elements(fp, start, end):
        if eid != TRACK_ENTRY:
            continue
        kind = None
        size: dict[int, int | None] = {}
        for sub, c, e in _elements(fp, content, stop):
            if sub == TRACK_TYPE:
                kind = _uint(fp, c, e)
            elif sub == VIDEO:
                for field, fc, fe in _elements(fp, c, e):
                    if field in (PIXEL_WIDTH, PIXEL_HEIGHT, DISPLAY_WIDTH, DISPLAY_HEIGHT):
                        size[field] = _uint(fp, fc, fe)
        if kind == 1 and size:
            # The display size when the file says one (its pixels may not be square).
            width = size.get(DISPLAY_WIDTH) or size.get(PIXEL_WIDTH)
            height = size.get(DISPLAY_HEIGHT) or size.get(PIXEL_HEIGHT)
            return width, height
    return None, None
