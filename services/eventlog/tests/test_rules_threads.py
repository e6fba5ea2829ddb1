"""The door's refusals for threads (rules/threads.py)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.unit


def thread(w: Any, root: str | None = None, **fields: Any) -> dict[str, Any]:
    event = {
        "type": "space.created",
        "kind": "thread",
        "parent_space_id": w.room,
        "root_message_id": root or w.said_by_maya,
    }
    event.update(fields)
    return {k: v for k, v in event.items() if v is not None}


def opened(w: Any) -> str:
    return str(w.created(w.p(w.MEM), thread(w)))


def test_a_parent_on_a_group(w: Any) -> None:
    w.says_no(
        w.p(w.MEM),
        thread(w, kind="group"),
        "invalid_event",
        "only a thread has a parent and a root message",
    )


def test_a_thread_without_its_root(w: Any) -> None:
    event = {"type": "space.created", "kind": "thread", "parent_space_id": w.room}
    w.says_no(w.p(w.MEM), event, "invalid_event", "a thread names its parent_space_id")


def test_a_thread_with_members(w: Any) -> None:
    w.says_no(
        w.p(w.MEM),
        thread(w, members=[w.OUT]),
        "invalid_event",
        "a thread has no members of its own",
    )


def test_a_thread_with_opened_for(w: Any) -> None:
    w.says_no(
        w.p(w.MEM), thread(w, opened_for=w.MEM), "invalid_event", "opened_for is filled in by Chips"
    )


def test_a_thread_by_a_stranger(w: Any) -> None:
    w.says_no(w.p(w.OUT), thread(w), "forbidden", "you are not a member of this space")


def test_a_thread_in_a_thread(w: Any) -> None:
    inner = opened(w)
    said = w.say(w.MEM, inner, "in the thread")
    w.says_no(
        w.p(w.MEM),
        thread(w, root=said, parent_space_id=inner),
        "invalid_event",
        "a thread is not opened inside a thread",
    )


def test_a_thread_in_a_closed_room(w: Any) -> None:
    w.ok(w.p(w.OWN), {"type": "space.updated", "space_id": w.room, "state": "closed"})
    w.says_no(w.p(w.MEM), thread(w), "invalid_event", "a thread is not opened in a closed space")


def test_a_thread_on_a_message_of_another_room(w: Any) -> None:
    elsewhere = w.say(w.OWN, w.other, "there")
    w.says_no(
        w.p(w.OWN),
        thread(w, root=elsewhere),
        "not_found",
        "root_message_id names no message of that room",
    )


def test_a_thread_on_a_message_taken_back(w: Any) -> None:
    w.ok(w.p(w.MEM), {"type": "message.deleted", "space_id": w.room, "message_id": w.said_by_maya})
    w.says_no(
        w.p(w.MEM), thread(w), "invalid_event", "a thread is not opened from a message taken back"
    )


def test_two_threads_on_one_message(w: Any) -> None:
    opened(w)
    w.says_no(w.p(w.OWN), thread(w), "invalid_event", "that message roots a thread already")


def test_a_thread_id_without_spc(w: Any) -> None:
    w.says_no(
        w.p(w.MEM), thread(w, space_id="thr_1"), "invalid_event", "a space's id starts with spc_"
    )


def test_a_thread_id_taken(w: Any) -> None:
    w.says_no(w.p(w.MEM), thread(w, space_id=w.other), "invalid_event", "that space already exists")


@pytest.mark.parametrize(
    "event",
    [
        {"type": "membership.added", "participant_id": "usr_out"},
        {"type": "membership.removed", "participant_id": "usr_mem"},
        {"type": "space.updated", "title": "Mine"},
        {"type": "space.lock_set", "locked": True},
    ],
    ids=["add", "remove", "retitle", "lock"],
)
def test_a_room_operation_on_a_thread(w: Any, event: dict[str, Any]) -> None:
    inner = opened(w)
    w.says_no(
        w.p(w.OWN),
        {**event, "space_id": inner},
        "invalid_event",
        "a thread has no members, title or state of its own",
    )


def test_a_room_operation_on_a_thread_by_a_stranger_learns_nothing(w: Any) -> None:
    inner = opened(w)
    w.says_no(
        w.p(w.OUT),
        {"type": "space.updated", "space_id": inner, "title": "X"},
        "forbidden",
        "you are not a member of this space",
    )


def test_whoever_is_in_the_room_is_in_its_threads(w: Any) -> None:
    inner = opened(w)
    assert w.state.standing(inner, w.GST) == "guest"
    w.say(w.GST, inner, "me too")
    w.ok(w.p(w.OWN), {"type": "membership.removed", "space_id": w.room, "participant_id": w.GST})
    w.says_no(
        w.p(w.GST),
        {"type": "message.post", "space_id": inner, "text": "x"},
        "forbidden",
        "you are not a member",
    )
