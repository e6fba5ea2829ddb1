"""What a listed room shows a reader who is no longer in it (a pure function)."""

from __future__ import annotations

import pytest

from chips_gateway.guard import now_visible

pytestmark = pytest.mark.unit

ROW = {
    "space_id": "spc_1",
    "key": "k",
    "shared": False,
    "title": "Renamed after you left",
    "state": "closed",
    "open": False,
    "moved_by": "usr_1",
    "moved_seq": 9,
}


def test_a_member_sees_the_whole_row() -> None:
    assert now_visible({**ROW, "member": True}) == {**ROW, "member": True}


def test_a_room_left_shows_only_its_name() -> None:
    shown = now_visible({**ROW, "member": False})
    assert shown["space_id"] == "spc_1" and shown["key"] == "k" and shown["member"] is False
    assert shown["title"] is None and shown["state"] is None and shown["moved_by"] is None
    assert set(shown) == set(ROW) | {"member"}
