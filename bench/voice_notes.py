"""How fast and how well voice notes are heard (docs/adr/0137).

Speaks each sentence with Debian's flite (``make flite``), in the voices pocketsphinx's
model hears (slt, rms, awb), and hears it as the attachments service does
(``chips_attachments.voice.hear`` with the configured engine, pocketsphinx by default),
in this process, with no infrastructure. Prints and writes
bench/results/voice_notes.json: seconds of audio heard per second of CPU, and the word
error rate over the sentences, per voice and in all.

    .venv/bin/python bench/voice_notes.py [--engine pocketsphinx] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from chips_attachments.voice import engine_named, hear, wav_duration_ms

SENTENCES = (
    "the quick brown fox jumps over the lazy dog",
    "please call me back this afternoon",
    "the meeting is moved to friday morning",
    "send the report to the team before lunch",
    "we need more paper for the printer",
    "the train leaves at seven in the evening",
)
VOICES = ("slt", "rms", "awb")


def word_errors(heard: str, said: str) -> int:
    a, b = said.split(), heard.split()
    row = list(range(len(b) + 1))
    for i, wa in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, wb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (wa != wb))
    return row[len(b)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", default="pocketsphinx")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    flite = shutil.which("flite")
    if flite is None:
        sys.exit("flite is missing: `make flite` installs it")
    engine = engine_named(args.engine)
    if engine is None:
        sys.exit("no engine to measure")
    engine.transcribe(b"\x00\x00" * 1600)  # the model loaded, outside the figures
    per_voice: dict[str, dict[str, float]] = {}
    total_audio = total_cpu = 0.0
    total_errors = total_words = 0
    with tempfile.TemporaryDirectory() as tmp:
        for voice in VOICES:
            audio = cpu = 0.0
            errors = words = 0
            for i, sentence in enumerate(SENTENCES):
                path = Path(tmp) / f"{voice}-{i}.wav"
                subprocess.run(
                    [flite, "-voice", voice, "-t", sentence, "-o", str(path)], check=True
                )
                with path.open("rb") as fp:
                    ms = wav_duration_ms(fp) or 0
                for _ in range(args.rounds):
                    started = time.process_time()
                    heard = hear(path, "audio/wav", ms, engine, 300_000)
                    cpu += time.process_time() - started
                    audio += ms / 1000
                errors += word_errors(heard.transcript or "", sentence)
                words += len(sentence.split())
            per_voice[voice] = {
                "audio_seconds_per_cpu_second": round(audio / cpu, 2),
                "word_error_rate": round(errors / words, 3),
            }
            total_audio, total_cpu = total_audio + audio, total_cpu + cpu
            total_errors, total_words = total_errors + errors, total_words + words
    result = {
        "engine": engine.name,
        "sentences": len(SENTENCES),
        "rounds": args.rounds,
        "voices": per_voice,
        "audio_seconds_per_cpu_second": round(total_audio / total_cpu, 2),
        "word_error_rate": round(total_errors / total_words, 3),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
    }
    print(json.dumps(result, indent=2))
    out = Path(__file__).resolve().parent / "results" / f"{args.label}voice_notes.json"
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
