"""Voice notes, end to end: spoken by flite, posted over HTTP, heard by Chips (docs/adr/0137).

docs/product/messages.md: "Any of them can carry attachments: photos, video, voice notes,
files … A voice note is found by what was said in it, and a hit that quotes those words
says it was a voice note, since a machine heard them." docs/product/websocket.md: a said line
"also has transcript for a voice note". The speech is Debian's flite with its ``slt`` voice
(``make flite`` installs it); the words are the sentence it was asked to say.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from chips_devstack.stack import Stack
from tests.e2e.client import Api, Socket
from tests.e2e.test_attachments import delivered, harness_room, post, upload, uploaded
from tests.e2e.test_cli import chips

SENTENCE = "the quick brown fox jumps over the lazy dog"


def spoken(words: str, path: Path) -> bytes:
    """``words`` said by flite's slt voice, as a 16 kHz mono PCM WAV."""
    flite = shutil.which("flite")
    if flite is None:
        pytest.fail("flite is missing: `make flite` installs it (Debian's flite package)")
    subprocess.run([flite, "-voice", "slt", "-t", words, "-o", str(path)], check=True, timeout=60)
    return path.read_bytes()


def wav_seconds(data: bytes) -> float:
    """What the WAV's own header says its length is (fmt's byte rate, data's size)."""
    byte_rate = struct.unpack("<I", data[28:32])[0]
    at = data.index(b"data")
    return int(struct.unpack("<I", data[at + 4 : at + 8])[0]) / byte_rate


def word_errors(heard: str, said: str) -> float:
    """The word error rate of ``heard`` against ``said`` (edit distance over words)."""
    a, b = said.lower().split(), heard.lower().split()
    row = list(range(len(b) + 1))
    for i, wa in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, wb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (wa != wb))
    return row[len(b)] / len(a)


async def transcribed(sock: Socket, attachment_id: str) -> dict[str, Any]:
    frame = await sock.wait_for(
        lambda f: (
            f["frame"] == "event"
            and f["event"]["type"] == "attachment.transcribed"
            and f["event"]["attachment_id"] == attachment_id
        ),
        timeout=60,
    )
    return dict(frame["event"])


async def test_a_voice_note_is_measured_heard_and_found_by_what_was_said(
    stack: Stack, api: Api, tmp_path: Path
) -> None:
    owner, harness, home, sock = await harness_room(api, stack)
    wav = spoken(SENTENCE, tmp_path / "note.wav")

    # The length is the file's, whatever the client says.
    r = await upload(api, owner, wav, "note.wav", voice_note="true", duration_ms="1")
    assert r.status_code == 201, r.text
    up = r.json()
    assert up["kind"] == "voice_note" and up["mime_type"] == "audio/wav"
    assert abs(up["duration_ms"] - wav_seconds(wav) * 1000) < 5

    seq = await api.append(owner, post(home, [up["upload_id"]]))
    message = await delivered(sock, seq)
    [note] = message["attachments"]
    assert note["kind"] == "voice_note" and note["duration_ms"] == up["duration_ms"]

    # Heard by Chips after the post, and told to the harness on its socket.
    heard = await transcribed(sock, up["upload_id"])
    assert heard["actor"] == {"kind": "system", "id": "system"}
    assert heard["space_id"] == home and heard["message_id"] == message["message_id"]
    assert heard["outcome"] == "words" and heard["engine"] == "pocketsphinx"
    # pocketsphinx hears slt's sentence word for word; a fifth of the words may slip.
    assert word_errors(heard["transcript"], SENTENCE) <= 0.2, heard["transcript"]

    # The next turn's context says the note's words on its line.
    seq2 = await api.append(
        owner, {"type": "message.post", "space_id": home, "text": "Did you hear?"}
    )
    turn = await delivered(sock, seq2)
    [line] = [x for x in turn["context"]["lines"] if x.get("message_id") == message["message_id"]]
    assert line["files"] == ["note.wav"] and line["transcript"] == heard["transcript"]

    # Search finds the note by a word it said, and says the hit was heard.
    found = await api.http.get(
        "/v1/search", params={"q": "brown fox", "after_seq": heard["seq"]}, headers=api.auth(owner)
    )
    assert found.status_code == 200, found.text
    [hit] = found.json()["hits"]
    assert hit["message_id"] == message["message_id"] and hit["voice_note"] is True
    assert any(s["match"] and s["text"].lower() == "fox" for s in hit["snippet"])
    cli = chips(stack, "search", "lazy dog", "--json", token=owner.token)
    assert cli.returncode == 0, cli.stderr
    assert [h["message_id"] for h in json.loads(cli.stdout)["hits"]] == [message["message_id"]]
    await sock.close()


async def test_a_voice_note_with_no_words_says_so_and_a_file_that_is_not_one_is_refused(
    stack: Stack, api: Api, tmp_path: Path
) -> None:
    """Silence is stored and played, and its note says no words were heard; bytes that
    are not a recording are refused as a voice note."""
    owner, harness, home, sock = await harness_room(api, stack)
    rate = 16_000
    pcm = b"\x00\x00" * rate * 2  # two seconds of silence
    header = (
        b"RIFF"
        + struct.pack("<I", 36 + len(pcm))
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16)
        + b"data"
        + struct.pack("<I", len(pcm))
    )
    silence = await upload(api, owner, header + pcm, "quiet.wav", voice_note="true")
    assert silence.status_code == 201, silence.text
    assert silence.json()["duration_ms"] == 2000
    await api.append(owner, post(home, [silence.json()["upload_id"]]))
    heard = await transcribed(sock, silence.json()["upload_id"])
    assert heard["outcome"] == "nothing" and "transcript" not in heard
    assert heard["note"] == "No words were heard in it."

    refused = await upload(api, owner, b"%PDF-1.4\n%%EOF\n", "po.pdf", voice_note="true")
    assert refused.status_code == 422
    assert refused.json() == {
        "code": "not_a_recording",
        "message": "A voice note is a recording, and this file is application/pdf.",
    }
    # The same recording uploaded as a file is audio, and nobody hears it.
    plain = await uploaded(api, owner, header + pcm, "quiet.wav")
    seq = await api.append(owner, post(home, [plain], "as a file"))
    [as_file] = (await delivered(sock, seq))["attachments"]
    assert as_file["kind"] == "file"
    await sock.close()


async def test_a_message_new_handed_over_after_the_hearing_carries_what_was_said(
    stack: Stack, api: Api, tmp_path: Path
) -> None:
    """A harness away while a voice note is posted and heard is handed the note, on its
    return, as a message.new whose voice note says what was heard (docs/adr/0147)."""
    owner, harness, home, sock = await harness_room(api, stack)
    await sock.close()  # away
    people = await Socket.open(stack.gateway_a, owner)
    await people.subscribe(owner.workspace_id)
    wav = spoken(SENTENCE, tmp_path / "note.wav")
    up = (await upload(api, owner, wav, "note.wav", voice_note="true")).json()
    seq = await api.append(owner, post(home, [up["upload_id"]]))
    heard = await transcribed(people, up["upload_id"])
    await people.close()
    back = await Socket.open(stack.gateway_a, harness)
    await back.subscribe(owner.workspace_id, since=seq - 1)
    message = await delivered(back, seq)
    [note] = message["attachments"]
    assert note["heard"]["outcome"] == "words", note
    assert note["heard"]["transcript"] == heard["transcript"]
    await back.close()
