"""An agent's face, as a pure rule (docs/adr/0153).

A harness gives one of its agents a face when it registers it or registers it again
(``POST /v1/harnesses/:id/agents``, ``face``): one emoji, or the ``attachment_id`` of a
picture the harness uploaded itself (``POST /v1/uploads``) of a kind a browser draws and
no bigger than :data:`FACE_IMAGE_BYTES`. An empty face takes it off; none keeps the one
it has. The door calls :func:`face_refusal` with what it read of the upload; the reads
tell an image face from an emoji by :func:`is_image_face`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from chips_common.rules.files import size_words
from chips_common.rules.may import No

# The most a picture given as a face may weigh: it is drawn at a few dozen pixels.
FACE_IMAGE_BYTES = 1_000_000
# The pictures Chips decodes itself (rules/files.py's inline pictures); never an SVG.
FACE_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
FACE_MAX_CHARS = 100

# What can stand as an emoji by itself (Unicode's Extended_Pictographic, as ranges; the
# regional indicators and skin-tone modifiers are left out: they only combine).
_PICTURE = (
    "\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194-\u2199\u21a9\u21aa\u231a\u231b\u2328"
    "\u23cf\u23e9-\u23f3\u23f8-\u23fa\u24c2\u25aa\u25ab\u25b6\u25c0\u25fb-\u25fe"
    "\u2600-\u27bf\u2934\u2935\u2b05-\u2b07\u2b1b\u2b1c\u2b50\u2b55\u3030\u303d\u3297\u3299"
    "\U0001f000-\U0001f1e5\U0001f200-\U0001f3fa\U0001f400-\U0001faff"
)
_ELEMENT = (
    f"[{_PICTURE}]"
    "(?:\ufe0f|[\U0001f3fb-\U0001f3ff])?\ufe0f?"  # shown as emoji, or a skin tone
    "(?:[\U000e0020-\U000e007e]+\U000e007f)?"  # a subdivision flag's tags
)
_EMOJI = re.compile(
    "(?:"
    "[\U0001f1e6-\U0001f1ff]{2}"  # a flag: two regional indicators
    "|[0-9#*]\ufe0f?\u20e3"  # a keycap
    f"|{_ELEMENT}(?:\u200d{_ELEMENT})*"  # one picture, or several joined into one
    ")"
)


@dataclass(frozen=True)
class FaceImage:
    """What the door read of the upload a face names."""

    uploader_id: str
    kind: str
    mime_type: str
    byte_size: int


def is_image_face(face: str | None) -> bool:
    """Whether a face names an upload (``att_…``) rather than being an emoji."""
    return bool(face) and str(face).startswith("att_")


def is_one_emoji(text: str) -> bool:
    """Whether ``text`` is exactly one emoji as a person sees it: one picture with its
    skin tone, a flag, a keycap, or pictures joined into one (👩‍💻), and nothing else."""
    return len(text) <= FACE_MAX_CHARS and _EMOJI.fullmatch(text) is not None


def face_refusal(face: str, harness_id: str, image: FaceImage | None) -> No | None:
    """Why the door refuses ``face`` for an agent of ``harness_id``, or None when it may
    be its face (``""`` takes the face off). ``image`` is the upload an image face names,
    as read from this workspace's uploads (None when there is no such upload)."""
    if face == "":
        return None
    if is_image_face(face):
        if image is None:
            return No(
                "not_found",
                "face names no upload of this workspace: upload the picture "
                "(POST /v1/uploads) and give its attachment_id",
                "face",
            )
        if image.uploader_id != harness_id:
            return No("forbidden", "a face is a picture this harness uploaded itself", "face")
        if image.kind != "photo" or image.mime_type not in FACE_IMAGE_TYPES:
            return No(
                "invalid_face",
                f"a face is a JPEG, PNG, GIF or WebP picture, and that upload is {image.mime_type}",
                "face",
            )
        if image.byte_size > FACE_IMAGE_BYTES:
            return No(
                "too_large",
                f"a face is at most {size_words(FACE_IMAGE_BYTES)}, "
                f"and that picture is {size_words(image.byte_size)}",
                "face",
            )
        return None
    if not is_one_emoji(face):
        return No(
            "invalid_face",
            "a face is one emoji, or the attachment_id of a picture this harness uploaded",
            "face",
        )
    return None
