"""Who may post which kind of message, and what passing a turn is (docs/product/messages.md,
docs/product/websocket.md, What a harness hears)."""

from __future__ import annotations

import pytest

from chips_common.events import KINDS
from chips_common.rules.kinds import HARNESS_ONLY, PERSON_ONLY, passes, refusal

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_has_its_senders(kind: str) -> None:
    person, harness = refusal(kind, "person"), refusal(kind, "harness")
    if kind == "system":
        assert person and harness and "Chips's own" in person
    elif kind in HARNESS_ONLY:
        assert person is not None and "harness's" in person and harness is None
    elif kind in PERSON_ONLY:
        assert harness is not None and "person" in harness and person is None
    else:  # text and handoff are anyone's
        assert person is None and harness is None


def test_the_eleven_kinds() -> None:
    assert len(KINDS) == 11


@pytest.mark.parametrize(
    ("kind", "text", "sender", "passed"),
    [
        ("text", "NO_REPLY", "harness", True),
        ("text", "  NO_REPLY\n", "harness", True),
        ("text", "NO_REPLY", "person", False),
        ("text", "NO_REPLY, thanks", "harness", False),
        ("text", "no_reply", "harness", False),
        ("summary", None, "harness", False),
    ],
)
def test_only_a_harness_s_no_reply_alone_passes(
    kind: str, text: str | None, sender: str, passed: bool
) -> None:
    assert passes(kind, text, sender) is passed
