"""What an upload's bytes are and what is kept of them (docs/product/messages.md, Attachments)."""

from __future__ import annotations

import struct
import zlib
from io import BytesIO
from pathlib import Path

import pytest
from PIL import Image

from chips_attachments.media import Unacceptable, keep, sniff

pytestmark = pytest.mark.unit

LIMIT = 50_000_000


def gps_jpeg(orientation: int = 6) -> bytes:
    im = Image.new("RGB", (40, 20), (200, 10, 10))
    exif = Image.Exif()
    exif[0x0112] = orientation
    exif[0x010F] = "Canon"
    exif[0x927C] = b"maker notes"
    exif[0x8825] = {1: "N", 2: (51.0, 30.0, 0.0), 3: "W", 4: (0.0, 7.0, 0.0)}
    out = BytesIO()
    im.save(out, "JPEG", exif=exif.tobytes(), comment=b"where I live")
    return out.getvalue()


def huge_png(width: int, height: int) -> bytes:
    """A valid PNG of ``width`` × ``height`` grey pixels, small because they are all zero."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    z = zlib.compressobj(9)
    row = b"\x00" * (width + 1)
    idat = b"".join(z.compress(row) for _ in range(height)) + z.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def put(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "original"
    path.write_bytes(data)
    return path


def test_a_photo_loses_its_location_and_is_turned_upright(tmp_path: Path) -> None:
    kept = keep(
        put(tmp_path, gps_jpeg()),
        tmp_path,
        "image/jpeg",
        keep_metadata=False,
        max_pixels=LIMIT,
        thumbnail_px=16,
    )
    assert kept.stripped and (kept.width, kept.height) == (20, 40)
    with Image.open(kept.path) as back:
        assert dict(back.getexif()) == {}
        assert "comment" not in back.info and "exif" not in back.info
        assert back.size == (20, 40)
    with Image.open(kept.thumbnail or "") as thumb:
        assert max(thumb.size) <= 16


def test_a_person_may_keep_a_photo_s_metadata(tmp_path: Path) -> None:
    kept = keep(
        put(tmp_path, gps_jpeg(orientation=1)),
        tmp_path,
        "image/jpeg",
        keep_metadata=True,
        max_pixels=LIMIT,
        thumbnail_px=16,
    )
    with Image.open(kept.path) as back:
        assert 0x8825 in back.getexif()


def test_a_truncated_photo_is_refused(tmp_path: Path) -> None:
    data = gps_jpeg()
    with pytest.raises(Unacceptable) as refused:
        keep(
            put(tmp_path, data[: len(data) // 2]),
            tmp_path,
            "image/jpeg",
            keep_metadata=False,
            max_pixels=LIMIT,
            thumbnail_px=16,
        )
    assert refused.value.code == "unreadable_file"


def test_a_decompression_bomb_is_refused_before_it_is_decoded(tmp_path: Path) -> None:
    with pytest.raises(Unacceptable) as refused:
        keep(
            put(tmp_path, huge_png(3000, 3000)),
            tmp_path,
            "image/png",
            keep_metadata=False,
            max_pixels=1_000_000,
            thumbnail_px=16,
        )
    assert refused.value.code == "image_too_large"
    assert "3,000 × 3,000" in refused.value.message


def test_the_type_is_what_the_bytes_say() -> None:
    assert sniff(gps_jpeg()[:8192]) == "image/jpeg"
    assert sniff(b"<!DOCTYPE html><html><script>alert(1)</script>") == "text/html"
    assert sniff(b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>') == (
        "image/svg+xml"
    )
    assert sniff(b"%PDF-1.7\n") == "application/pdf"
    assert sniff("plain words, ünïcode".encode()) == "text/plain"
    assert sniff(b"\x00\x01\x02\x03") == "application/octet-stream"
