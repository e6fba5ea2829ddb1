"""An agent's face at the door (rules/agents/register.py, docs/adr/0153): given when it is
registered, changed or taken off when it is registered again, checked by
``chips_common.rules.faces`` against the upload an image face names."""

from __future__ import annotations

from typing import Any

import pytest

from chips_eventlog.state import Upload
from chips_eventlog.state_prefetch import reads_for

pytestmark = pytest.mark.unit


def register(w: Any, **fields: Any) -> list[dict[str, Any]]:
    command = {"command": "agent.register", "harness_id": w.H1, "key": "oc", "name": "Oc"}
    return w.ok(w.h(w.H1), {**command, **fields})  # type: ignore[no-any-return]


def uploaded(
    w: Any, upload_id: str, by: str, mime_type: str = "image/png", size: int = 900
) -> None:
    """What state_prefetch reads for a batch whose registration names the picture."""
    kind = "photo" if mime_type.startswith("image/") else "file"
    w.state.uploads[upload_id] = Upload(upload_id, by, "me.png", mime_type, kind, size, "s1")


def test_a_face_is_logged_changed_kept_and_taken_off(w: Any) -> None:
    first = register(w, face="🦊")
    assert [e["type"] for e in first] == ["agent.registered"] and first[0]["face"] == "🦊"
    agent_id = first[0]["agent_id"]
    assert w.state.participants[agent_id].agent.face == "🦊"
    assert register(w) == []  # no face: it keeps the one it has
    assert register(w, face="🦊") == []  # the same face changes nothing
    uploaded(w, "att_me", w.H1)
    pictured = register(w, face="att_me")
    assert [(e["type"], e["face"]) for e in pictured] == [("agent.updated", "att_me")]
    assert "name" not in pictured[0] and "state" not in pictured[0]
    taken_off = register(w, face="")
    assert [(e["type"], e["face"]) for e in taken_off] == [("agent.updated", "")]
    assert w.state.participants[agent_id].agent.face is None
    assert register(w, face="") == []


def test_a_face_that_is_no_emoji_is_refused(w: Any) -> None:
    command = {"command": "agent.register", "harness_id": w.H1, "key": "oc", "name": "Oc"}
    w.says_no(w.h(w.H1), {**command, "face": "OC"}, "invalid_face", "one emoji")
    w.says_no(w.h(w.H1), {**command, "face": "🦊🦊"}, "invalid_face", "one emoji")


def test_an_image_face_is_the_harness_own_picture_under_the_cap(w: Any) -> None:
    command = {"command": "agent.register", "harness_id": w.H1, "key": "oc", "name": "Oc"}
    w.says_no(w.h(w.H1), {**command, "face": "att_none"}, "not_found", "POST /v1/uploads")
    uploaded(w, "att_theirs", w.H2)
    w.says_no(w.h(w.H1), {**command, "face": "att_theirs"}, "forbidden", "uploaded itself")
    uploaded(w, "att_pdf", w.H1, "application/pdf")
    w.says_no(w.h(w.H1), {**command, "face": "att_pdf"}, "invalid_face", "application/pdf")
    uploaded(w, "att_big", w.H1, size=3_000_000)
    w.says_no(w.h(w.H1), {**command, "face": "att_big"}, "too_large", "at most 1 MB")


def test_a_batch_reads_the_picture_a_registration_names_and_nothing_for_an_emoji(w: Any) -> None:
    command = {"command": "agent.register", "harness_id": w.H1, "key": "oc", "name": "Oc"}
    reads = reads_for(w.state, [{**command, "face": "att_me"}])
    assert reads and reads.faces == {"att_me"}
    assert not reads_for(w.state, [{**command, "face": "🦊"}, command])
