"""The room's files and the caps, as pure rules (docs/product/messages.md, Attachments;
docs/product/websocket.md, The room's files)."""

from __future__ import annotations

import pytest

from chips_common.rules.files import (
    Caps,
    Stale,
    Version,
    disposition_for,
    kind_of,
    next_version,
    over_cap,
    size_words,
)

pytestmark = pytest.mark.unit

MB = 1_000_000


def test_the_cap_sentence_is_the_spec_s() -> None:
    """docs/product/messages.md: "Videos here are capped at 50 MB, and this one is 62.3 MB." """
    caps = Caps(ceiling=500 * MB, videos=50 * MB)
    assert over_cap(caps, "video", 62_300_000) == (
        "Videos here are capped at 50 MB, and this one is 62.3 MB."
    )
    assert over_cap(caps, "video", 50 * MB) is None


def test_a_cap_never_raises_the_ceiling_and_audio_counts_as_a_file() -> None:
    caps = Caps(ceiling=10 * MB, photos=20 * MB, files=2 * MB)
    assert caps.cap_for("photo") == 10 * MB
    assert caps.cap_for("video") == 10 * MB
    assert kind_of("audio/mpeg") == "file"
    assert over_cap(caps, kind_of("audio/mpeg"), 3 * MB) == (
        "Files here are capped at 2 MB, and this one is 3 MB."
    )


def test_sizes_read_as_people_say_them() -> None:
    assert size_words(800_000) == "800 KB"
    assert size_words(1_250_000_000) == "1.2 GB"
    assert size_words(12) == "12 bytes"


def test_only_pictures_and_pdfs_are_shown_inline() -> None:
    assert disposition_for("image/jpeg") == "inline"
    assert disposition_for("application/pdf") == "inline"
    for scriptable in ("text/html", "image/svg+xml", "application/xml", "text/plain"):
        assert disposition_for(scriptable) == "attachment"
    assert kind_of("image/svg+xml") == "file"


CURRENT = Version(attachment_id="att_v2", version=2, sha256="b" * 64, by_name="Oc2")


def test_a_first_file_of_a_name_is_version_one() -> None:
    assert next_version("a.html", None, "a" * 64, replaces="att_x") == 1


def test_new_bytes_are_the_next_version() -> None:
    assert next_version("a.html", CURRENT, "c" * 64, replaces=None) == 3
    assert next_version("a.html", CURRENT, "c" * 64, replaces="att_v2") == 3


def test_a_post_made_from_an_older_version_is_stale() -> None:
    stale = next_version("ascii-alphabet.html", CURRENT, "c" * 64, replaces="att_v1")
    assert stale == Stale("ascii-alphabet.html is now v2, by Oc2. Fetch it and redo.")


def test_the_current_version_s_bytes_are_never_stale() -> None:
    assert next_version("a.html", CURRENT, "b" * 64, replaces="att_v1") == 2
