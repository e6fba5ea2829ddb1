"""The door state in memory: a refused request leaves nothing, a batch keeps its window."""

from __future__ import annotations

from typing import Any

import pytest

from chips_eventlog import state as door_state
from chips_eventlog.state import DoorState, Message

pytestmark = pytest.mark.unit


def test_a_request_refused_at_its_second_event_leaves_no_trace(w: Any) -> None:
    before = (dict(w.state.spaces), len(w.state.messages), w.state.head_seq)
    refusal = w.refused(
        w.p(w.OWN),
        {"type": "space.created", "kind": "group", "title": "New", "members": [w.MEM]},
        {"type": "message.post", "space_id": "spc_nowhere", "text": "x"},
    )
    assert refusal.code == "forbidden"
    assert (dict(w.state.spaces), len(w.state.messages), w.state.head_seq) == before
    assert w.state.membership_log == []  # touched rows are written as they stand: unchanged


def test_the_batch_s_writes_are_the_rows_as_they_stand() -> None:
    """What state_store.flush writes is read from the snapshot for every touched row."""
    from chips_eventlog.state import AddMember, PutSpace, RemoveMember, Space

    s = DoorState("ws")
    s.apply([PutSpace(Space("spc_1", "group", "T", "usr_a", 1))])
    s.apply([AddMember("spc_1", "usr_a", "owner", 1), AddMember("spc_1", "usr_b", "member", 2)])
    s.apply([RemoveMember("spc_1", "usr_b", 3)])
    assert s.touched["memberships"] == {("spc_1", "usr_a"), ("spc_1", "usr_b")}
    assert s.members["spc_1"].keys() == {"usr_a"}  # usr_b's row is deleted at flush
    assert [(r["participant_id"], r["added"]) for r in s.membership_log] == [
        ("usr_a", True),
        ("usr_b", True),
        ("usr_b", False),
    ]
    s.settle(3, [])
    assert s.touched["memberships"] == set() and s.membership_log == []


def test_the_windows_keep_the_newest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(door_state, "MESSAGE_WINDOW", 2)
    monkeypatch.setattr(door_state, "KEY_WINDOW", 2)
    s = DoorState("ws")
    for i in range(3):
        s.remember(Message(f"msg_{i}", "spc_1", "usr_a", "person"))
    s.settle(3, [(("crd", f"k{i}"), [i], None) for i in range(3)])
    assert list(s.messages) == ["msg_1", "msg_2"]
    assert list(s.keys) == [("crd", "k1"), ("crd", "k2")]
