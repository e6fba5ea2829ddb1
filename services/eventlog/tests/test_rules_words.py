"""The door's refusals for what is done to a message (rules/words.py)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.unit


def about(type_: str, space_id: str, message_id: str, **fields: Any) -> dict[str, Any]:
    return {"type": type_, "space_id": space_id, "message_id": message_id, **fields}


def edit(space_id: str, message_id: str) -> dict[str, Any]:
    return about("message.edited", space_id, message_id, text="new words")


def taken_back(w: Any) -> str:
    w.ok(w.p(w.MEM), about("message.deleted", w.room, w.said_by_maya))
    return str(w.said_by_maya)


def react(space_id: str, message_id: str, emoji: str = "👍") -> dict[str, Any]:
    return about("feedback", space_id, message_id, kind="reaction", emoji=emoji)


def correct(space_id: str, message_id: str) -> dict[str, Any]:
    return about("feedback", space_id, message_id, kind="correction", note="it is 41")


def test_edit_from_a_stranger(w: Any) -> None:
    w.says_no(w.p(w.OUT), edit(w.room, w.said_by_maya), "forbidden", "not a member")


def test_edit_of_nothing(w: Any) -> None:
    w.says_no(
        w.p(w.MEM),
        edit(w.room, "msg_01NOTHING"),
        "not_found",
        "message_id names no message in this space",
    )


def test_edit_of_a_message_of_another_room(w: Any) -> None:
    w.says_no(
        w.p(w.OWN),
        edit(w.other, w.said_by_maya),
        "not_found",
        "message_id names no message in this space",
    )


def test_edit_of_a_message_taken_back(w: Any) -> None:
    said = taken_back(w)
    w.says_no(w.p(w.MEM), edit(w.room, said), "invalid_event", "that message was taken back")


def test_edit_of_another_author(w: Any) -> None:
    w.says_no(
        w.p(w.OWN),
        edit(w.room, w.said_by_maya),
        "forbidden",
        "only the author of a message may edit it",
    )


def test_edit_of_a_system_line(w: Any) -> None:
    from chips_eventlog.state import Message

    w.state.messages["msg_01SYSTEM"] = Message("msg_01SYSTEM", w.room, w.MEM, "person", "system")
    w.says_no(w.p(w.MEM), edit(w.room, "msg_01SYSTEM"), "forbidden", "a system line is not edited")


def test_take_back_twice(w: Any) -> None:
    said = taken_back(w)
    w.says_no(
        w.p(w.MEM),
        about("message.deleted", w.room, said),
        "invalid_event",
        "that message was taken back already",
    )


def test_take_back_by_a_member_of_another_s_words(w: Any) -> None:
    w.says_no(
        w.p(w.GST),
        about("message.deleted", w.room, w.said_by_maya),
        "forbidden",
        "a message is taken back by its author",
    )


def test_take_back_by_a_harness_of_another_s_words(w: Any) -> None:
    w.says_no(
        w.h(w.H2),
        about("message.deleted", w.room, w.said_by_maya),
        "forbidden",
        "a message is taken back by its author",
    )


def test_take_back_by_an_admin(w: Any) -> None:
    w.ok(w.p(w.ADM), about("message.deleted", w.room, w.said_by_maya))
    assert w.state.said(w.said_by_maya).deleted


def test_hide_by_a_harness(w: Any) -> None:
    w.says_no(
        w.h(w.H1),
        about("message.hidden", w.room, w.said_by_maya),
        "forbidden",
        "message.hidden is a person's; a harness may not send it",
    )


def test_hide_by_a_stranger(w: Any) -> None:
    w.says_no(
        w.p(w.OUT), about("message.hidden", w.room, w.said_by_maya), "forbidden", "not a member"
    )


def test_hide_of_nothing(w: Any) -> None:
    w.says_no(
        w.p(w.MEM),
        about("message.hidden", w.room, "msg_01NOTHING"),
        "not_found",
        "message_id names no message in this space",
    )


def test_hide_twice(w: Any) -> None:
    w.ok(w.p(w.MEM), about("message.hidden", w.room, w.said_by_scout))
    w.says_no(
        w.p(w.MEM),
        about("message.hidden", w.room, w.said_by_scout),
        "invalid_event",
        "you have hidden that message already",
    )


def test_show_what_was_not_hidden(w: Any) -> None:
    w.says_no(
        w.p(w.MEM),
        about("message.shown", w.room, w.said_by_scout),
        "invalid_event",
        "you have not hidden that message",
    )


def test_hide_a_tombstone_then_show_it(w: Any) -> None:
    said = taken_back(w)
    w.ok(w.p(w.OWN), about("message.hidden", w.room, said))
    assert w.state.is_hidden(said, w.OWN)
    w.ok(w.p(w.OWN), about("message.shown", w.room, said))
    assert not w.state.is_hidden(said, w.OWN)


def test_pin_by_a_stranger(w: Any) -> None:
    w.says_no(
        w.p(w.OUT), about("message.pinned", w.room, w.said_by_maya), "forbidden", "not a member"
    )


def test_pin_by_a_guest(w: Any) -> None:
    w.says_no(
        w.p(w.GST),
        about("message.pinned", w.room, w.said_by_maya),
        "forbidden",
        "a guest does not pin messages",
    )


def test_pin_of_a_message_taken_back(w: Any) -> None:
    said = taken_back(w)
    w.says_no(
        w.p(w.OWN),
        about("message.pinned", w.room, said),
        "invalid_event",
        "that message was taken back",
    )


def test_pin_twice(w: Any) -> None:
    w.ok(w.p(w.MEM), about("message.pinned", w.room, w.said_by_scout))
    w.says_no(
        w.p(w.MEM),
        about("message.pinned", w.room, w.said_by_scout),
        "invalid_event",
        "that message is pinned already",
    )


def test_unpin_what_is_not_pinned(w: Any) -> None:
    w.says_no(
        w.p(w.MEM),
        about("message.unpinned", w.room, w.said_by_scout),
        "invalid_event",
        "that message is not pinned",
    )


def test_taking_back_unpins(w: Any) -> None:
    w.ok(w.p(w.MEM), about("message.pinned", w.room, w.said_by_maya))
    taken_back(w)
    assert not w.state.said(w.said_by_maya).pinned


def test_feedback_from_a_harness(w: Any) -> None:
    w.says_no(
        w.h(w.H1), react(w.room, w.said_by_maya), "forbidden", "feedback is a person's to give"
    )


def test_feedback_from_a_stranger(w: Any) -> None:
    w.says_no(w.p(w.OUT), react(w.room, w.said_by_maya), "forbidden", "not a member")


def test_feedback_on_nothing(w: Any) -> None:
    w.says_no(
        w.p(w.MEM),
        react(w.room, "msg_01NOTHING"),
        "not_found",
        "message_id names no message anybody sent",
    )


def test_feedback_on_a_message_of_another_room(w: Any) -> None:
    w.says_no(
        w.p(w.OWN),
        react(w.other, w.said_by_maya),
        "invalid_event",
        "that message was said in another space",
    )


def test_feedback_on_a_message_taken_back(w: Any) -> None:
    said = taken_back(w)
    w.says_no(w.p(w.OWN), react(w.room, said), "invalid_event", "that message was taken back")


def test_a_correction_of_a_person_s_words(w: Any) -> None:
    w.says_no(
        w.p(w.OWN),
        correct(w.room, w.said_by_maya),
        "invalid_event",
        "a correction is on a harness's words",
    )


def test_a_correction_of_a_harness_fills_in_whose_and_standing(w: Any) -> None:
    logged = w.ok(w.p(w.MEM), correct(w.room, w.said_by_scout))
    assert (logged[0]["about"], logged[0]["standing"]) == (w.H1, "member")


def test_the_same_reaction_twice_takes_it_back(w: Any) -> None:
    first = w.ok(w.p(w.MEM), react(w.room, w.said_by_scout))
    assert "withdrawn" not in first[0]
    assert w.state.reacted(w.said_by_scout, w.MEM, "👍")
    again = w.ok(w.p(w.MEM), react(w.room, w.said_by_scout))
    assert again[0]["withdrawn"] is True
    assert not w.state.reacted(w.said_by_scout, w.MEM, "👍")
