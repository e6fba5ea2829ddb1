"""Voice notes: what a recording is, its length from its headers, and what it said
(docs/adr/0137). The speech is flite's ``slt`` voice (``make flite``), heard by the
pocketsphinx engine with the model its package ships."""

from __future__ import annotations

import shutil
import struct
import subprocess
from io import BytesIO
from pathlib import Path

import pytest

from chips_attachments.media import Unacceptable, keep
from chips_attachments.voice import (
    Heard,
    Pocketsphinx,
    engine_named,
    hear,
    ogg_duration_ms,
    wav_duration_ms,
)

pytestmark = pytest.mark.unit

# Sentences pocketsphinx's small model hears from slt; the bound below is over all of them.
SENTENCES = (
    "the quick brown fox jumps over the lazy dog",
    "please call me back this afternoon",
    "the meeting is moved to friday morning",
)
# At most this share of the words may be misheard, over the sentences (word error rate).
MAX_WORD_ERRORS = 0.2


def wav(pcm: bytes, rate: int = 16_000, channels: int = 1) -> bytes:
    fmt = struct.pack("<HHIIHH", 1, channels, rate, rate * 2 * channels, 2 * channels, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
    body += b"LIST" + struct.pack("<I", 5) + b"INFO!" + b"\x00"  # an odd chunk, padded
    body += b"data" + struct.pack("<I", len(pcm)) + pcm
    return b"RIFF" + struct.pack("<I", len(body)) + body


def ogg_page(granule: int, payload: bytes, flags: int = 0) -> bytes:
    return (
        b"OggS"
        + struct.pack("<BBqIIIB", 0, flags, granule, 1, 0, 0, 1)
        + bytes([len(payload)])
        + payload
    )


def spoken(words: str, path: Path) -> Path:
    flite = shutil.which("flite")
    if flite is None:
        pytest.fail("flite is missing: `make flite` installs it (Debian's flite package)")
    subprocess.run([flite, "-voice", "slt", "-t", words, "-o", str(path)], check=True, timeout=60)
    return path


def word_errors(heard: str, said: str) -> int:
    a, b = said.split(), heard.split()
    row = list(range(len(b) + 1))
    for i, wa in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, wb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (wa != wb))
    return row[len(b)]


def test_a_wav_lasts_what_its_data_chunk_holds_at_its_byte_rate() -> None:
    assert wav_duration_ms(BytesIO(wav(b"\x00\x00" * 24_000))) == 1500
    assert wav_duration_ms(BytesIO(wav(b"\x00\x00" * 44_100, rate=44_100, channels=2))) == 500
    assert wav_duration_ms(BytesIO(b"RIFF\x00\x00\x00\x00WAVE")) is None
    assert wav_duration_ms(BytesIO(b"not a wav at all")) is None


def test_an_ogg_lasts_to_its_last_granule() -> None:
    opus = ogg_page(0, b"OpusHead\x01\x01\x38\x01\x80\xbb\x00\x00\x00\x00\x00", flags=2)
    assert ogg_duration_ms(BytesIO(opus + ogg_page(96_000, b"x" * 40))) == 2000
    vorbis_id = b"\x01vorbis" + struct.pack("<IBI", 0, 1, 22_050) + b"\x00" * 16
    ogg = ogg_page(0, vorbis_id, flags=2) + ogg_page(22_050 * 3, b"y" * 20)
    assert ogg_duration_ms(BytesIO(ogg)) == 3000
    assert ogg_duration_ms(BytesIO(b"OggS" + b"\x00" * 40)) is None


def test_a_voice_note_is_kept_as_a_recording_measured_from_its_headers(tmp_path: Path) -> None:
    path = tmp_path / "note"
    path.write_bytes(wav(b"\x01\x00" * 8_000))
    kept = keep(
        path,
        tmp_path,
        "audio/x-wav",
        keep_metadata=False,
        max_pixels=1,
        thumbnail_px=1,
        voice_note=True,
    )
    assert (kept.kind, kept.mime_type, kept.duration_ms) == ("voice_note", "audio/wav", 500)
    # The same bytes not posted as a voice note are a file.
    assert (
        keep(path, tmp_path, "audio/x-wav", keep_metadata=False, max_pixels=1, thumbnail_px=1).kind
        == "file"
    )
    pdf = tmp_path / "po.pdf"
    pdf.write_bytes(b"%PDF-1.4\n")
    with pytest.raises(Unacceptable) as refused:
        keep(
            pdf,
            tmp_path,
            "application/pdf",
            keep_metadata=False,
            max_pixels=1,
            thumbnail_px=1,
            voice_note=True,
        )
    assert refused.value.message == "A voice note is a recording, and this file is application/pdf."


def test_silence_is_heard_as_nothing_and_a_long_note_is_not_heard(tmp_path: Path) -> None:
    engine = Pocketsphinx()
    quiet = tmp_path / "quiet.wav"
    quiet.write_bytes(wav(b"\x00\x00" * 32_000))
    assert hear(quiet, "audio/wav", 2000, engine, 60_000) == Heard(
        "nothing", note="No words were heard in it."
    )
    assert hear(quiet, "audio/wav", 600_000, engine, 300_000) == Heard(
        "too_long",
        note="Not transcribed: it is 10 minutes long, and voice notes are heard up to 5 minutes.",
    )
    # The header is read, not the client's word, when the length was not measured.
    assert hear(quiet, "audio/wav", None, engine, 1000).outcome == "too_long"
    assert hear(quiet, "audio/webm", 2000, engine, 60_000).note == (
        "Not transcribed: only WAV recordings are heard here; play it to hear it."
    )


def test_flites_sentences_are_heard_within_the_bound(tmp_path: Path) -> None:
    engine = engine_named("pocketsphinx")
    assert engine is not None and engine.name == "pocketsphinx"
    errors = words = 0
    for i, sentence in enumerate(SENTENCES):
        path = spoken(sentence, tmp_path / f"s{i}.wav")
        with path.open("rb") as fp:
            ms = wav_duration_ms(fp)
        heard = hear(path, "audio/wav", ms, engine, 60_000)
        assert heard.outcome == "words", heard
        errors += word_errors(heard.transcript or "", sentence)
        words += len(sentence.split())
    assert errors / words <= MAX_WORD_ERRORS


def test_a_deployment_plugs_its_own_engine_in_by_name() -> None:
    assert engine_named("none") is None
    engine = engine_named(f"{__name__}:Echo")
    assert engine is not None and engine.transcribe(b"\x00\x01") == "two bytes"


class Echo:
    name = "echo"

    def transcribe(self, pcm: bytes) -> str:
        return "two bytes" if len(pcm) == 2 else ""
