"""An agent's face, as a pure rule (docs/adr/0153)."""

from __future__ import annotations

import pytest

from chips_common.rules.faces import (
    FACE_IMAGE_BYTES,
    FaceImage,
    face_refusal,
    is_image_face,
    is_one_emoji,
)

HARNESS = "hrn_1"


def picture(**changed: object) -> FaceImage:
    fields: dict[str, object] = {
        "uploader_id": HARNESS,
        "kind": "photo",
        "mime_type": "image/png",
        "byte_size": 20_000,
    }
    fields.update(changed)
    return FaceImage(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "face",
    [
        "🦊",
        "🤖",
        "☕",
        "❤️",  # a text picture shown as emoji
        "👍🏽",  # a skin tone
        "👩‍💻",  # pictures joined into one
        "👨‍👩‍👧‍👦",
        "🏳️‍🌈",
        "🇫🇷",  # a flag
        "🏴󠁧󠁢󠁳󠁣󠁴󠁿",  # a subdivision flag
        "1️⃣",  # a keycap
    ],
)
def test_one_emoji_is_a_face(face: str) -> None:
    assert is_one_emoji(face)
    assert face_refusal(face, HARNESS, None) is None


@pytest.mark.parametrize(
    "face",
    ["A", "ab", "🦊🦊", " 🦊", "🦊 ", "🦊x", "🇫", "🏽", "\u200d", "‍🦊", ":fox:", "1", "🦊\u200d"],
)
def test_anything_else_is_refused_with_a_sentence(face: str) -> None:
    assert not is_one_emoji(face)
    no = face_refusal(face, HARNESS, None)
    assert no is not None and no.code == "invalid_face" and no.field == "face"
    assert "one emoji" in no.message


def test_an_empty_face_takes_it_off() -> None:
    assert face_refusal("", HARNESS, None) is None


def test_a_picture_the_harness_uploaded_is_a_face() -> None:
    assert is_image_face("att_01ABC") and not is_image_face("🦊") and not is_image_face(None)
    assert face_refusal("att_01ABC", HARNESS, picture()) is None
    assert face_refusal("att_01ABC", HARNESS, picture(byte_size=FACE_IMAGE_BYTES)) is None


def test_an_upload_that_is_not_there_is_not_found() -> None:
    no = face_refusal("att_nothere", HARNESS, None)
    assert no is not None and no.code == "not_found" and "POST /v1/uploads" in no.message


def test_somebody_elses_upload_is_refused() -> None:
    no = face_refusal("att_1", HARNESS, picture(uploader_id="usr_2"))
    assert no is not None and no.code == "forbidden"


@pytest.mark.parametrize(
    ("kind", "mime_type"),
    [
        ("file", "application/pdf"),
        ("file", "image/svg+xml"),
        ("video", "video/mp4"),
        ("photo", "image/heic"),
    ],
)
def test_an_upload_that_is_no_picture_is_refused(kind: str, mime_type: str) -> None:
    no = face_refusal("att_1", HARNESS, picture(kind=kind, mime_type=mime_type))
    assert no is not None and no.code == "invalid_face" and mime_type in no.message


def test_a_picture_over_the_cap_is_too_large() -> None:
    no = face_refusal("att_1", HARNESS, picture(byte_size=2_500_000))
    assert no is not None and no.code == "too_large"
    assert no.message == "a face is at most 1 MB, and that picture is 2.5 MB"
    assert face_refusal("att_1", HARNESS, picture(byte_size=FACE_IMAGE_BYTES + 1)) is not None
