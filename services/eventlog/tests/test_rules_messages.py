"""The door's refusals for posting, passing and the composer (rules/messages.py, runs.py)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.unit


def post(space_id: str, text: str | None = "hi", **fields: Any) -> dict[str, Any]:
    event = {"type": "message.post", "space_id": space_id, **fields}
    if text is not None:
        event["text"] = text
    return event


def test_a_stranger_posts(w: Any) -> None:
    w.says_no(w.p(w.OUT), post(w.room), "forbidden", "you are not a member of this space")


def test_a_person_posts_a_harness_card(w: Any) -> None:
    status = {"phase": "p", "verb": "v"}
    w.says_no(
        w.p(w.MEM),
        post(w.room, kind="status", status=status),
        "forbidden",
        "a status card is a harness's to post",
    )


def test_a_harness_gives_a_task(w: Any) -> None:
    w.says_no(
        w.h(w.H1),
        post(w.room, kind="task", task={"goal": "g"}),
        "forbidden",
        "a task is given by a person",
    )


def test_a_hand_off_to_someone_outside(w: Any) -> None:
    handoff = {"recipient": w.OUT, "summary": "s"}
    w.says_no(
        w.p(w.MEM),
        post(w.room, kind="handoff", handoff=handoff),
        "not_found",
        "a hand-off goes to somebody in this room",
    )


def test_a_reply_to_nothing(w: Any) -> None:
    w.says_no(
        w.p(w.MEM),
        post(w.room, reply_to="msg_01NOTHING"),
        "not_found",
        "reply_to names no message in this space",
    )


def test_a_reply_to_a_message_of_another_room(w: Any) -> None:
    elsewhere = w.say(w.OWN, w.other, "there")
    w.says_no(
        w.p(w.OWN),
        post(w.room, reply_to=elsewhere),
        "not_found",
        "reply_to names no message in this space",
    )


def test_a_run_receipt_from_a_harness(w: Any) -> None:
    receipt = {"idempotency_key": "k", "disposition": "queued", "run_ids": [], "harness_ids": []}
    w.says_no(
        w.h(w.H1),
        post(w.room, run_receipt=receipt),
        "invalid_event",
        "run_receipt is filled in by Chips",
    )


def test_a_run_receipt_from_a_person_with_no_run(w: Any) -> None:
    receipt = {"idempotency_key": "k", "disposition": "queued", "run_ids": [], "harness_ids": []}
    w.says_no(
        w.p(w.MEM),
        post(w.room, run_receipt=receipt),
        "invalid_event",
        "run_receipt is filled in by Chips",
    )


def test_no_reply_from_a_stranger(w: Any) -> None:
    w.says_no(
        w.h(w.H2), post(w.other, "NO_REPLY"), "forbidden", "you are not a member of this space"
    )


def test_no_reply_to_nothing(w: Any) -> None:
    w.says_no(
        w.h(w.H1),
        post(w.room, "NO_REPLY", reply_to="msg_01NOTHING"),
        "not_found",
        "reply_to names no message in this space",
    )


def test_no_reply_is_logged_as_a_turn_passed(w: Any) -> None:
    logged = w.ok(w.h(w.H1), post(w.room, "NO_REPLY", reply_to=w.said_by_maya))
    assert [(e["type"], e["reply_to"]) for e in logged] == [("turn.passed", w.said_by_maya)]


def test_a_command_written_wrong(w: Any) -> None:
    w.says_no(w.p(w.MEM), post(w.room, "/title"), "invalid_event", "/title needs the new title")


def test_a_command_written_wrong_by_a_stranger(w: Any) -> None:
    w.says_no(w.p(w.OUT), post(w.room, "/title"), "forbidden", "you are not a member")


def test_a_command_from_a_stranger(w: Any) -> None:
    w.says_no(w.p(w.OUT), post(w.room, "/archive"), "forbidden", "you are not a member")


def test_add_nobody(w: Any) -> None:
    w.says_no(w.p(w.OWN), post(w.room, "/add @nobody"), "not_found", "nobody")


def test_remove_who_is_not_in_the_room(w: Any) -> None:
    w.says_no(w.p(w.OWN), post(w.other, "/remove @maya"), "not_found", "nobody")


def test_wrong_with_nothing_to_correct(w: Any) -> None:
    w.says_no(
        w.p(w.OWN),
        post(w.other, "/wrong the total is off"),
        "not_found",
        "no harness has said anything here to correct",
    )


def test_wrong_corrects_the_last_harness_message_read_for_the_batch(w: Any) -> None:
    w.state.last_harness_said[w.room] = w.said_by_scout
    logged = w.ok(w.p(w.MEM), post(w.room, "/wrong the total is off"))
    assert [(e["type"], e["message_id"]) for e in logged] == [("feedback", w.said_by_scout)]


def test_a_composer_command_is_decided_by_the_rule_it_names(w: Any) -> None:
    w.says_no(
        w.p(w.GST),
        post(w.room, "/add @otto"),
        "forbidden",
        "a guest may talk and leave, not add anyone",
    )


def test_add_two_people_each_decided_in_turn(w: Any) -> None:
    space_id = w.space(w.OWN, [])
    logged = w.ok(w.p(w.OWN), post(space_id, "/add @maya @otto"))
    assert [e["participant_id"] for e in logged] == [w.MEM, w.OUT]


def test_a_composer_command_refused_halfway_logs_none_of_it(w: Any) -> None:
    space_id = w.space(w.OWN, [w.OUT])
    w.says_no(
        w.p(w.OWN),
        post(space_id, "/add @maya @otto"),
        "invalid_event",
        "already a member of this space",
    )
    assert w.state.standing(space_id, w.MEM) is None


def test_wreply_without_an_answer(w: Any) -> None:
    w.says_no(
        w.p(w.MEM),
        post(w.room, "wreply q1"),
        "invalid_event",
        "wreply names the question and the answer",
    )


def test_wreply_from_a_stranger(w: Any) -> None:
    w.says_no(w.p(w.OUT), post(w.room, "wreply q1 yes"), "forbidden", "you are not a member")


def test_wreply_to_an_id_that_is_not_one(w: Any) -> None:
    w.says_no(w.p(w.MEM), post(w.room, "wreply q/1 yes"), "invalid_event", "is not a question's id")


def test_wreply_to_no_question(w: Any) -> None:
    w.says_no(
        w.p(w.MEM),
        post(w.room, "wreply q1 yes"),
        "not_found",
        "no question q1 was asked in this room",
    )


def test_stop_with_nothing_running(w: Any) -> None:
    w.says_no(
        w.p(w.MEM),
        post(w.room, "/stop"),
        "invalid_event",
        "nothing is running in this room to stop",
    )


def test_stop_from_a_stranger(w: Any) -> None:
    w.says_no(w.p(w.OUT), post(w.room, "/stop"), "forbidden", "you are not a member")


def test_stop_cancels_every_live_run(w: Any) -> None:
    w.run("run_1")
    w.run("run_2", who=w.H2)
    logged = w.ok(w.p(w.MEM), post(w.room, "/stop"))
    assert [(e["type"], e["run_id"]) for e in logged] == [
        ("run.cancel", "run_1"),
        ("run.cancel", "run_2"),
    ]
    assert w.state.live_runs(w.room) == []


def test_words_into_a_room_with_a_live_run_get_a_receipt(w: Any) -> None:
    w.run("run_1")
    logged = w.ok(w.p(w.MEM), post(w.room, "also check May"))
    assert logged[0]["run_receipt"]["run_ids"] == ["run_1"]


def test_a_mention_addresses_the_harness_and_is_remembered(w: Any) -> None:
    logged = w.ok(w.p(w.MEM), post(w.room, "@Scout please"))
    assert logged[0]["mentions"] == [w.H1]
    assert w.H1 in logged[0]["addressed_to"]
