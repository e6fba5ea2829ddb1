"""The door's refusals for deleting a space, and what an erasure clears (rules/erase.py)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.unit


def erase(space_id: str) -> dict[str, Any]:
    return {"type": "space.erased", "space_id": space_id}


def test_a_stranger_deletes(w: Any) -> None:
    w.says_no(w.p(w.OUT), erase(w.room), "forbidden", "you are not a member of this space")


def test_a_thread_deleted_on_its_own(w: Any) -> None:
    thread = w.created(
        w.p(w.MEM),
        {
            "type": "space.created",
            "kind": "thread",
            "parent_space_id": w.room,
            "root_message_id": w.said_by_maya,
        },
    )
    w.says_no(
        w.p(w.OWN), erase(thread), "invalid_event", "a thread goes with its room: delete the room"
    )


def test_a_harness_deletes(w: Any) -> None:
    w.says_no(w.h(w.H1), erase(w.room), "forbidden", "a space is deleted by a person")


def test_a_member_deletes(w: Any) -> None:
    w.says_no(
        w.p(w.MEM),
        erase(w.room),
        "forbidden",
        "only the room's owner, or a workspace owner or admin, deletes it",
    )


def test_a_home_is_never_deleted(w: Any) -> None:
    w.says_no(w.p(w.OWN), erase(w.home), "forbidden", "a harness's home is never deleted")


def test_a_locked_room(w: Any) -> None:
    w.ok(w.p(w.OWN), {"type": "space.lock_set", "space_id": w.room, "locked": True})
    w.says_no(w.p(w.OWN), erase(w.room), "forbidden", "this room's changes are locked")


def test_a_direct_space_is_archived_instead_and_only_once(w: Any) -> None:
    direct = w.created(w.p(w.OWN), {"type": "space.created", "kind": "direct", "members": [w.MEM]})
    logged = w.ok(w.p(w.OWN), erase(direct))
    assert [(e["type"], e["state"]) for e in logged] == [("space.updated", "closed")]
    w.says_no(w.p(w.OWN), erase(direct), "invalid_event", "it is archived already")


def test_space_erased_inside_a_composer_has_no_rule(w: Any) -> None:
    from chips_common.events import SpaceErased
    from chips_eventlog.door import Door
    from chips_eventlog.refused import Refused

    door = Door(w.state, w.now)
    with pytest.raises(Refused) as caught:
        door.check(SpaceErased(space_id=w.room), w.p(w.OWN), None)
    assert caught.value.message == "a space is deleted on its own"


def test_an_erasure_clears_the_room_from_the_door_state(w: Any) -> None:
    thread = w.created(
        w.p(w.MEM),
        {
            "type": "space.created",
            "kind": "thread",
            "parent_space_id": w.room,
            "root_message_id": w.said_by_maya,
        },
    )
    w.ok(w.p(w.MEM), {"type": "message.pinned", "space_id": w.room, "message_id": w.said_by_scout})
    w.ok(
        w.p(w.MEM),
        {
            "type": "feedback",
            "space_id": w.room,
            "message_id": w.said_by_scout,
            "kind": "reaction",
            "emoji": "👍",
        },
    )
    w.run("run_1")
    w.ok(
        w.p(w.OWN),
        {
            "type": "lane.opened",
            "lane_id": "lane_1",
            "from_space_id": w.room,
            "to_space_id": w.other,
            "task": {"goal": "g"},
        },
    )
    logged = w.ok(w.p(w.OWN), erase(w.room))
    assert logged[-1]["type"] == "space.erased"
    assert logged[-1]["threads"] == [thread]
    assert logged[-1]["follows"] == [{"harness_id": w.H1, "delete": True}]
    s = w.state
    assert s.space(w.room).state == "erased" and s.space(w.room).title is None
    assert s.space(thread).state == "erased"
    assert s.standing(w.room, w.MEM) is None and s.room_members(w.room) == []
    assert s.said(w.said_by_scout) is None and s.marks == {} and s.reactions == {}
    assert s.runs == {} and s.lanes == {} and s.live_runs(w.room) == []
    w.says_no(
        w.p(w.OWN),
        {"type": "message.post", "space_id": w.room, "text": "x"},
        "forbidden",
        "you are not a member",
    )
