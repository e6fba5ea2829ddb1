"""A video's width, height and duration, from its container's headers (ADR 0050)."""

from __future__ import annotations

import struct
import time
from io import BytesIO

import pytest

from chips_attachments.media import keep
from chips_attachments.video import VideoFacts, measure

pytestmark = pytest.mark.unit

QUARTER_TURN = (0, 0x10000, 0, -0x10000, 0, 0, 0, 0, 0x40000000)
UPRIGHT = (0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000)


def box(kind: bytes, *content: bytes) -> bytes:
    body = b"".join(content)
    return struct.pack(">I4s", 8 + len(body), kind) + body


def trak(handler: bytes, width: int, height: int, matrix: tuple[int, ...] = UPRIGHT) -> bytes:
    tkhd = box(
        b"tkhd",
        struct.pack(">B3xIIIII8xhhhh", 0, 0, 0, 1, 0, 0, 0, 0, 0, 0),
        struct.pack(">9i", *matrix),
        struct.pack(">II", width << 16, height << 16),
    )
    hdlr = box(b"hdlr", struct.pack(">I4x4s12x", 0, handler), b"name\x00")
    return box(b"trak", tkhd, box(b"mdia", hdlr))


def mp4(*traks: bytes, timescale: int = 600, duration: int = 6300) -> bytes:
    mvhd = box(b"mvhd", struct.pack(">B3xIIII", 0, 0, 0, timescale, duration), b"\x00" * 80)
    ftyp = box(b"ftyp", b"isom\x00\x00\x02\x00isomiso2mp41")
    return ftyp + box(b"moov", mvhd, *traks) + box(b"mdat", b"\x00" * 64)


def element(eid: int, content: bytes, unknown_size: bool = False) -> bytes:
    size = (
        b"\x01\xff\xff\xff\xff\xff\xff\xff"
        if unknown_size
        else b"\x01" + struct.pack(">Q", len(content))[1:]
    )
    return eid.to_bytes((eid.bit_length() + 7) // 8, "big") + size + content


def uint(eid: int, value: int) -> bytes:
    return element(eid, value.to_bytes(4, "big"))


def webm(width: int, height: int, duration_ticks: float, scale: int = 1_000_000) -> bytes:
    header = element(0x1A45DFA3, element(0x4282, b"webm"))
    info = element(
        0x1549A966, uint(0x2AD7B1, scale) + element(0x4489, struct.pack(">d", duration_ticks))
    )
    audio = element(0xAE, uint(0x83, 2))
    video = element(0xAE, uint(0x83, 1) + element(0xE0, uint(0xB0, width) + uint(0xBA, height)))
    tracks = element(0x1654AE6B, audio + video)
    cluster = element(0x1F43B675, b"\x00" * 32)
    return header + element(0x18538067, info + tracks + cluster, unknown_size=True)


def test_an_mp4_says_its_size_and_length_in_its_headers() -> None:
    data = mp4(trak(b"soun", 0, 0), trak(b"vide", 1920, 1080))
    assert measure(BytesIO(data), "video/mp4") == VideoFacts(1920, 1080, 10_500)


def test_a_phone_video_turned_a_quarter_is_as_tall_as_it_shows() -> None:
    data = mp4(trak(b"vide", 1920, 1080, QUARTER_TURN), timescale=1000, duration=2500)
    assert measure(BytesIO(data), "video/quicktime") == VideoFacts(1080, 1920, 2500)


def test_a_webm_says_its_size_and_length_before_its_first_cluster() -> None:
    data = webm(640, 360, 4321.0)
    assert measure(BytesIO(data), "video/webm") == VideoFacts(640, 360, 4321)
    # A tick of a tenth of a second: the duration is in ticks.
    assert measure(BytesIO(webm(8, 6, 25.0, 100_000_000)), "video/x-matroska").duration_ms == 2500


def test_what_cannot_be_read_is_not_known_and_nothing_is_refused() -> None:
    data = mp4(trak(b"vide", 1920, 1080))
    for cut in (10, 40, 120, len(data) - 70):
        facts = measure(BytesIO(data[:cut]), "video/mp4")
        assert isinstance(facts, VideoFacts)
    assert measure(BytesIO(webm(640, 360, 1.0)[:30]), "video/webm") == VideoFacts()
    assert measure(BytesIO(b"\x00" * 64), "video/mp4") == VideoFacts()


def test_a_file_made_to_be_walked_forever_is_read_in_bounded_time() -> None:
    # A million empty boxes before the movie header: the reader gives up after a few.
    endless = box(b"ftyp", b"isom") + box(b"free") * 1_000_000 + mp4(trak(b"vide", 4, 4))
    started = time.perf_counter()
    assert measure(BytesIO(endless), "video/mp4") == VideoFacts()
    assert time.perf_counter() - started < 0.5
    # A box claiming to be larger than the file ends the walk, it is not followed.
    lying = box(b"ftyp", b"isom") + struct.pack(">I4sQ", 1, b"moov", 2**62)
    assert measure(BytesIO(lying), "video/mp4") == VideoFacts()


def test_a_kept_video_carries_its_measures(tmp_path: object) -> None:
    from pathlib import Path

    workdir = Path(str(tmp_path))
    original = workdir / "original"
    original.write_bytes(mp4(trak(b"vide", 1280, 720)))
    kept = keep(original, workdir, "video/mp4", keep_metadata=False, max_pixels=1, thumbnail_px=16)
    assert (kept.kind, kept.width, kept.height, kept.duration_ms) == ("video", 1280, 720, 10_500)
