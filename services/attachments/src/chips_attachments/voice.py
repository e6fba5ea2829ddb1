"""Voice notes: what a recording is, how long it lasts, and what was said in it (docs/adr/0137).

A voice note is a recording posted as one (``POST /v1/uploads?voice_note=true``). What the
bytes are is sniffed, as every upload's is; its length is read from the container's
headers, never taken from the client and never decoded for it (docs/adr/0050): a WAV's
``fmt `` and ``data`` chunks, an Ogg stream's last granule position, a WebM's or an MP4's
headers (``video.measure``). Everything here is blocking, for a worker thread.

Hearing it is an engine behind one interface (:class:`Engine`), chosen by configuration
(``CHIPS_TRANSCRIBER``): ``pocketsphinx`` (the default: its small English model ships in
the package, so nothing is fetched and nothing leaves the machine), ``none``, or
``module:attribute`` naming a factory of a deployment's own engine. The engine is given
16 kHz mono 16-bit PCM; the recordings turned into that here are PCM WAVs (the app records
one). Any other recording is kept and played, and its note says it was not heard.
"""

from __future__ import annotations

import importlib
import struct
import threading
import warnings
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal, Protocol

from chips_attachments.video import measure

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import audioop as _audioop

# The recordings a voice note may be, as sniffed; a WebM or MP4 with no picture is a
# recording too (a browser's MediaRecorder writes audio into WebM).
AUDIO_TYPES = frozenset(
    {
        "audio/x-wav",
        "audio/wav",
        "audio/ogg",
        "audio/opus",
        "audio/webm",
        "audio/mp4",
        "audio/m4a",
        "audio/x-m4a",
        "audio/mpeg",
        "audio/aac",
        "audio/x-flac",
        "audio/flac",
    }
)
# Containers a picture or a sound may be in: a voice note in one has no picture.
CONTAINERS = {
    "video/webm": "audio/webm",
    "video/x-matroska": "audio/webm",
    "video/mp4": "audio/mp4",
}
WAV_TYPES = frozenset({"audio/x-wav", "audio/wav"})
RATE = 16_000
# The loudest sample of a recording with nothing in it to hear (about -40 dBFS): an engine
# given silence may still "hear" a word in it.
QUIET = 330
# What a screen and a harness are told with the words (docs/product/jacobian-channel.md).
MISHEARD = "Heard by a machine: a name or a number may be misheard."

Outcome = Literal["words", "nothing", "too_long", "failed"]


class NotARecording(Exception):
    """Bytes posted as a voice note that are not a recording."""


@dataclass(frozen=True)
class Recording:
    mime_type: str
    duration_ms: int | None


def recording(path: Path, mime_type: str) -> Recording:
    """What a voice note's bytes are and how long they last; NotARecording if they are not."""
    if mime_type in CONTAINERS:
        with path.open("rb") as fp:
            facts = measure(fp, mime_type)
        if facts.width is not None or facts.height is not None:
            raise NotARecording("this is a video")
        return Recording(CONTAINERS[mime_type], facts.duration_ms)
    if mime_type not in AUDIO_TYPES:
        raise NotARecording(mime_type)
    with path.open("rb") as fp:
        if mime_type in WAV_TYPES:
            return Recording("audio/wav", wav_duration_ms(fp))
        if mime_type in ("audio/ogg", "audio/opus"):
            return Recording("audio/ogg", ogg_duration_ms(fp))
        if mime_type in ("audio/mp4", "audio/m4a", "audio/x-m4a"):
            return Recording("audio/mp4", measure(fp, "video/mp4").duration_ms)
    return Recording(mime_type, None)


def wav_duration_ms(fp: BinaryIO) -> int | None:
    """A RIFF WAVE's length: its ``data`` chunk's size over the ``fmt `` chunk's byte rate.

    Only chunk headers are read (at most 64 of them); what cannot be read is not known.
    """
    head = fp.read(12)
    if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        return None
    byte_rate: int | None = None
    for _ in range(64):
        chunk = fp.read(8)
        if len(chunk) < 8:
            return None
        ident, size = chunk[:4], struct.unpack("<I", chunk[4:])[0]
        if ident == b"fmt ":
            fmt = fp.read(min(size, 16))
            if len(fmt) < 12:
                return None
            byte_rate = struct.unpack("<I", fmt[8:12])[0]
            fp.seek(size - len(fmt) + (size & 1), 1)
        elif ident == b"data":
            if not byte_rate:
                return None
            if size in (0, 0xFFFFFFFF):  # a stream's placeholder: the rest of the file
                here = fp.tell()
                size = fp.seek(0, 2) - here
            return int(size * 1000 / byte_rate)
        else:
            fp.seek(size + (size & 1), 1)
    return None


def ogg_duration_ms(fp: BinaryIO) -> int | None:
    """An Ogg stream's length: the last page's granule position over the codec's rate
    (48 kHz for Opus; a Vorbis identification header's own rate). Reads the first page
    and the file's last 64 KB."""
    first = fp.read(128)
    if first[:4] != b"OggS":
        return None
    segments = first[26] if len(first) > 26 else 0
    packet = first[27 + segments :]
    if packet.startswith(b"OpusHead"):
        rate = 48_000
    elif packet[:7] == b"\x01vorbis" and len(packet) >= 16:
        rate = struct.unpack("<I", packet[12:16])[0]
    else:
        return None
    end = fp.seek(0, 2)
    fp.seek(max(0, end - 65_536))
    tail = fp.read()
    at = tail.rfind(b"OggS")
    if at < 0 or len(tail) < at + 14 or rate == 0:
        return None
    granule = struct.unpack("<q", tail[at + 6 : at + 14])[0]
    if granule < 0:
        return None
    return int(granule * 1000 / rate)


# --- hearing --------------------------------------------------------------------------


class Engine(Protocol):
    """What turns speech into words: 16 kHz mono 16-bit PCM in, the words out."""

    name: str

    def transcribe(self, pcm: bytes) -> str: ...


class Pocketsphinx:
    """CMU PocketSphinx with the US English model its package ships; one decoder a thread."""

    name = "pocketsphinx"

    def __init__(self) -> None:
        self.local = threading.local()

    def transcribe(self, pcm: bytes) -> str:
        from pocketsphinx import Decoder  # type: ignore[import-untyped]

        decoder = getattr(self.local, "decoder", None)
        if decoder is None:
            decoder = Decoder(samprate=RATE, loglevel="FATAL")
            self.local.decoder = decoder
        decoder.start_utt()
        decoder.process_raw(pcm, full_utt=True)
        decoder.end_utt()
        if decoder.hyp() is None:
            return ""
        # Silences, breaths and noises are the model's fillers, not words.
        words = [str(seg.word) for seg in decoder.seg()]
        return " ".join(w.split("(")[0] for w in words if not w.startswith(("<", "[", "+")))


def engine_named(name: str) -> Engine | None:
    """The engine ``CHIPS_TRANSCRIBER`` names: ``pocketsphinx``, ``none`` (None), or a
    ``module:attribute`` factory of a deployment's own."""
    if name in ("", "none"):
        return None
    if name == "pocketsphinx":
        return Pocketsphinx()
    module, _, attribute = name.partition(":")
    factory = getattr(importlib.import_module(module), attribute)
    engine: Engine = factory()
    return engine


@dataclass(frozen=True)
class Heard:
    outcome: Outcome
    transcript: str | None = None
    note: str | None = None


def minutes_words(ms: int) -> str:
    seconds = round(ms / 1000)
    if seconds < 120:
        return f"{seconds} seconds"
    return f"{round(seconds / 60)} minutes"


def pcm_of(path: Path, max_ms: int) -> bytes | Heard:
    """A PCM WAV as 16 kHz mono 16-bit samples, or why it cannot be heard."""
    try:
        with wave.open(str(path), "rb") as w:
            channels, width, rate = w.getnchannels(), w.getsampwidth(), w.getframerate()
            frames = w.getnframes()
            if rate <= 0 or frames * 1000 // rate > max_ms:
                return Heard("too_long", note=too_long(frames * 1000 // max(rate, 1), max_ms))
            raw = w.readframes(frames)
    except (wave.Error, EOFError, struct.error, OSError) as exc:
        return Heard("failed", note=f"It could not be heard: the recording is unreadable ({exc}).")
    if width != 2:
        raw = _audioop.lin2lin(raw, width, 2)
    if channels == 2:
        raw = _audioop.tomono(raw, 2, 0.5, 0.5)
    elif channels != 1:
        return Heard("failed", note=f"It could not be heard: it has {channels} channels.")
    if rate != RATE:
        raw, _ = _audioop.ratecv(raw, 2, 1, rate, RATE, None)
    return raw


def too_long(ms: int, max_ms: int) -> str:
    return (
        f"Not transcribed: it is {minutes_words(ms)} long, and voice notes are heard "
        f"up to {minutes_words(max_ms)}."
    )


def hear(path: Path, mime_type: str, duration_ms: int | None, engine: Engine, max_ms: int) -> Heard:
    """What was said in a posted voice note, or why nothing is written down."""
    if duration_ms is not None and duration_ms > max_ms:
        return Heard("too_long", note=too_long(duration_ms, max_ms))
    if mime_type not in WAV_TYPES:
        return Heard(
            "failed",
            note="Not transcribed: only WAV recordings are heard here; play it to hear it.",
        )
    pcm = pcm_of(path, max_ms)
    if isinstance(pcm, Heard):
        return pcm
    if not pcm or _audioop.max(pcm, 2) < QUIET:
        return Heard("nothing", note="No words were heard in it.")
    words = " ".join(engine.transcribe(pcm).split())
    if not words:
        return Heard("nothing", note="No words were heard in it.")
    return Heard("words", transcript=words, note=MISHEARD)
