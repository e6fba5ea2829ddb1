"""A voice note recorded in the people's app, heard by Chips, found and read (docs/adr/0137).

Debian's chromium is given a fake microphone that says a sentence flite spoke
(``--use-file-for-fake-audio-capture``); the person records it from the composer, sends it,
and sees the player with the words under it; a harness hears the words on its socket and
search finds the note by them. The player and the transcript read back in a second
browser from the room's lines.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, async_playwright, expect

from chips_devstack.stack import Stack
from tests.e2e import test_web_app as web
from tests.e2e.client import Api
from tests.e2e.test_voice_notes import spoken, transcribed, wav_seconds, word_errors
from tests.e2e.test_web_app import CHROMIUM, harness_socket, sign_in

SENTENCE = "the quick brown fox jumps over the lazy dog"

# The browser fixtures of the app's own tests: one chromium, the app built once.
built_app = web.built_app
browser = web.browser


@pytest.fixture
async def speaking_browser(built_app: None, tmp_path: Path) -> AsyncIterator[tuple[Browser, float]]:
    """A chromium whose microphone says SENTENCE (once), and how long it speaks."""
    wav = spoken(SENTENCE, tmp_path / "said.wav")
    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                "--no-sandbox",
                "--use-fake-ui-for-media-stream",
                "--use-fake-device-for-media-stream",
                f"--use-file-for-fake-audio-capture={tmp_path / 'said.wav'}%noloop",
            ],
        )
        yield chromium, wav_seconds(wav)
        await chromium.close()


async def test_a_voice_note_recorded_in_the_app_is_heard_shown_found_and_read_by_a_harness(
    stack: Stack, api: Api, speaking_browser: tuple[Browser, float], browser: Browser
) -> None:
    chromium, seconds = speaking_browser
    owner = await api.create_workspace(owner="Arjun Rao")
    scout, _ = await api.connect_harness(owner, "Scout")
    room = await web.room_with(api, owner, "Shop floor", scout)
    harness = await harness_socket(stack, scout)
    arjun = await sign_in(chromium, stack.gateway_a, owner, permissions=["microphone"])
    await arjun.open_room(room)
    page = arjun.page

    record = page.get_by_role("button", name="Record a voice note")
    await record.click()
    stop = page.get_by_role("button", name="Stop recording and attach the voice note")
    await expect(stop).to_be_visible()
    # The fake microphone says the sentence once; recording runs as long as it speaks.
    await page.wait_for_timeout(int(seconds * 1000) + 1500)
    await stop.click()
    tray = page.get_by_test_id("tray")
    await expect(tray.locator("li").filter(has_text="voice-note.wav")).to_contain_text("ready")
    await page.get_by_role("button", name=re.compile("^Send")).click()

    # The harness is handed the note, then what Chips heard in it.
    new = await harness.wait_for(
        lambda f: (
            f["frame"] == "event"
            and f["event"]["type"] == "message.new"
            and any(a["kind"] == "voice_note" for a in f["event"].get("attachments") or ())
        )
    )
    [note] = new["event"]["attachments"]
    assert note["mime_type"] == "audio/wav" and note["duration_ms"] >= seconds * 1000
    heard = await transcribed(harness, note["attachment_id"])
    assert heard["outcome"] == "words", heard
    words = heard["transcript"]
    # Through the browser's recorder (Opus and back) the sentence is heard less well than
    # from the file: half of its words at least.
    assert word_errors(words, SENTENCE) <= 0.5, words

    # The room shows the player, its length, and the words under it.
    line = page.get_by_test_id("voice-note").first
    await expect(line.get_by_test_id("transcript")).to_have_text(words)
    await expect(line.get_by_test_id("transcript-note")).to_have_text(
        "Heard by a machine: a name or a number may be misheard."
    )
    player = line.get_by_test_id("voice-player")
    await expect(player).to_have_js_property("readyState", 4, timeout=15_000)
    duration = await player.evaluate("a => a.duration")
    assert abs(duration - note["duration_ms"] / 1000) < 0.2

    # Search finds it by a word it said, and says it was heard.
    word = next(w for w in words.split() if len(w) > 3)
    found = await api.http.get(
        "/v1/search", params={"q": word, "after_seq": heard["seq"]}, headers=api.auth(owner)
    )
    [hit] = found.json()["hits"]
    assert hit["message_id"] == new["event"]["message_id"] and hit["voice_note"] is True

    # Read back from the room's lines in another browser: the same player and words.
    again = await sign_in(browser, stack.gateway_b, owner)
    await again.open_room(room)
    await expect(again.page.get_by_test_id("transcript").first).to_have_text(words)
    await harness.close()
