"""The door's refusals for runs and their cards (rules/runs.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

pytestmark = pytest.mark.unit


def of_run(type_: str, run_id: str = "run_1", **fields: Any) -> dict[str, Any]:
    return {"type": type_, "run_id": run_id, **fields}


def started(w: Any, run_id: str = "run_9", **fields: Any) -> dict[str, Any]:
    return {"type": "run.started", "run_id": run_id, "space_id": w.room, "goal": "g", **fields}


def approval(approval_id: str = "ap1", **fields: Any) -> dict[str, Any]:
    return of_run("approval.request", approval_id=approval_id, action="pay", **fields)


def question(question_id: str = "q1", free_text: bool = False) -> dict[str, Any]:
    options = [{"value": "yes", "label": "Yes"}, {"value": "no", "label": "No"}]
    return of_run(
        "question.ask", question_id=question_id, prompt="Pay?", options=options, free_text=free_text
    )


def decided(decision: str = "approve", approval_id: str = "ap1", **f: Any) -> dict[str, Any]:
    return {"type": "approval.resolved", "approval_id": approval_id, "decision": decision, **f}


def answered(question_id: str = "q1", **fields: Any) -> dict[str, Any]:
    return {"type": "question.answered", "question_id": question_id, **fields}


def running(w: Any) -> Any:
    w.run("run_1")
    return w


def test_a_person_starts_a_run(w: Any) -> None:
    w.says_no(
        w.p(w.MEM), started(w), "forbidden", "on its own token (the one `chips connect` printed)"
    )


def test_a_run_in_a_room_the_harness_is_not_in(w: Any) -> None:
    w.says_no(w.h(w.H2), started(w, space_id=w.other), "forbidden", "not a member")


def test_a_run_started_twice(w: Any) -> None:
    running(w)
    w.says_no(
        w.h(w.H1), started(w, "run_1"), "invalid_event", "run_1 was started already; name a new run"
    )


def test_an_event_of_no_run(w: Any) -> None:
    w.says_no(
        w.h(w.H1),
        of_run("run.status", phase="p"),
        "not_found",
        "no run run_1 was started in this workspace",
    )


def test_an_event_naming_another_space(w: Any) -> None:
    running(w)
    w.says_no(
        w.h(w.H1),
        of_run("run.status", space_id=w.other),
        "invalid_event",
        "run_1 is a run of another space",
    )


def test_another_harness_writes_about_the_run(w: Any) -> None:
    running(w)
    w.says_no(w.h(w.H2), of_run("run.status"), "forbidden", "run_1 is another harness's run")


def test_a_person_writes_a_harness_s_run_event(w: Any) -> None:
    running(w)
    w.says_no(
        w.p(w.MEM),
        of_run("run.status"),
        "forbidden",
        "only the harness whose run it is writes run.status",
    )


def test_a_stranger_cancels(w: Any) -> None:
    running(w)
    w.says_no(w.p(w.OUT), of_run("run.cancel"), "forbidden", "not a member")


def test_an_ended_run_takes_nothing(w: Any) -> None:
    running(w).ok(w.h(w.H1), of_run("run.completed"))
    w.says_no(
        w.h(w.H1),
        of_run("run.status"),
        "invalid_event",
        "run_1 has ended (completed); it takes nothing more, run.status included",
    )


def test_pausing_a_paused_run(w: Any) -> None:
    running(w).ok(w.h(w.H1), of_run("run.paused"))
    w.says_no(w.h(w.H1), of_run("run.paused"), "invalid_event", "run_1 is not running")


def test_resuming_a_running_run(w: Any) -> None:
    running(w)
    w.says_no(w.h(w.H1), of_run("run.resumed"), "invalid_event", "run_1 is not paused")


def test_a_step_while_paused(w: Any) -> None:
    running(w).ok(w.h(w.H1), of_run("run.paused"))
    w.says_no(
        w.h(w.H1),
        of_run("step.log", step_id="s1", status="started"),
        "invalid_event",
        "run_1 is paused; resume it before its next step",
    )


def test_a_harness_steers(w: Any) -> None:
    running(w)
    w.says_no(
        w.h(w.H1),
        of_run("run.steer", mode="steer", text="t"),
        "forbidden",
        "a run is steered by a person in its room",
    )


def test_a_steer_gets_a_receipt(w: Any) -> None:
    running(w)
    logged = w.ok(w.p(w.MEM), of_run("run.steer", mode="followup", text="and May"))
    assert logged[0]["run_receipt"]["disposition"] == "queued"


def test_an_approval_asked_twice(w: Any) -> None:
    running(w).ok(w.h(w.H1), approval())
    w.says_no(w.h(w.H1), approval(), "invalid_event", "approval ap1 was asked already")


def test_a_question_asked_twice(w: Any) -> None:
    running(w).ok(w.h(w.H1), question())
    w.says_no(w.h(w.H1), question(), "invalid_event", "question q1 was asked already")


def test_an_answer_to_no_card(w: Any) -> None:
    w.says_no(w.p(w.OWN), decided(), "not_found", "no approval ap1 was asked in this workspace")


def test_an_answer_naming_another_space(w: Any) -> None:
    running(w).ok(w.h(w.H1), approval())
    w.says_no(
        w.p(w.OWN),
        decided(space_id=w.other),
        "invalid_event",
        "approval ap1 is a card of another space",
    )


def test_an_answer_from_a_stranger(w: Any) -> None:
    running(w).ok(w.h(w.H1), approval())
    w.says_no(w.p(w.OUT), decided(), "forbidden", "not a member")


def test_the_second_answer_loses(w: Any) -> None:
    running(w).ok(w.h(w.H1), approval())
    w.ok(w.p(w.OWN), decided())
    w.says_no(
        w.p(w.OWN),
        decided("deny"),
        "invalid_event",
        "approval ap1 was decided already, first by Arjun (approve)",
    )


def test_a_decision_by_another_harness(w: Any) -> None:
    running(w).ok(w.h(w.H1), approval())
    w.says_no(w.h(w.H2), decided(), "forbidden", "asked by another harness's run")


def test_a_decision_by_someone_the_card_does_not_name(w: Any) -> None:
    running(w).ok(w.h(w.H1), approval())
    w.says_no(
        w.p(w.MEM), decided(), "forbidden", "decided by the harness's owner or the people it names"
    )


def test_a_decision_by_someone_the_card_names(w: Any) -> None:
    running(w).ok(w.h(w.H1), approval(answerers=[w.MEM]))
    logged = w.ok(w.p(w.MEM), decided())
    assert logged[0]["run_id"] == "run_1"


def test_a_decision_after_expiry(w: Any) -> None:
    expired = (w.now - timedelta(minutes=1)).isoformat()
    running(w).ok(w.h(w.H1), approval(expires_at=expired))
    w.says_no(w.p(w.OWN), decided(), "invalid_event", "approval ap1 expired at")


def test_a_question_settled_by_another_harness(w: Any) -> None:
    running(w).ok(w.h(w.H1), question())
    w.says_no(
        w.h(w.H2), answered(value="yes"), "forbidden", "question q1 is another harness's to settle"
    )


def test_an_answer_that_is_not_an_option(w: Any) -> None:
    running(w).ok(w.h(w.H1), question())
    w.says_no(
        w.p(w.MEM),
        answered(value="maybe"),
        "invalid_event",
        "'maybe' is not an option of question q1",
    )


def test_typed_words_answer_a_question_with_options_too(w: Any) -> None:
    """Every card takes a written answer (docs/adr/0134): words that are no option are
    logged as words, with no value."""
    running(w).ok(w.h(w.H1), question())
    logged = w.ok(w.p(w.MEM), answered(text="perhaps, after the audit"))
    assert logged[0]["text"] == "perhaps, after the audit"
    assert "value" not in logged[0]


def test_typed_words_choose_an_option_by_its_label(w: Any) -> None:
    running(w).ok(w.h(w.H1), question())
    logged = w.ok(w.p(w.MEM), answered(text="YES"))
    assert logged[0]["value"] == "yes"


def test_an_answer_after_the_run_ended(w: Any) -> None:
    running(w).ok(w.h(w.H1), question(free_text=True))
    w.ok(w.h(w.H1), of_run("run.completed"))
    w.says_no(
        w.p(w.MEM),
        answered(text="late"),
        "invalid_event",
        "the run that asked it, run_1, has ended (completed)",
    )


def test_wreply_answers_a_question_in_the_room(w: Any) -> None:
    running(w).ok(w.h(w.H1), question(free_text=True))
    logged = w.ok(w.p(w.MEM), {"type": "message.post", "space_id": w.room, "text": "wreply q1 no"})
    assert [(e["type"], e.get("value")) for e in logged] == [("question.answered", "no")]


def test_leaving_a_room_cancels_the_harness_s_runs_first(w: Any) -> None:
    running(w)
    logged = w.ok(
        w.p(w.OWN), {"type": "membership.removed", "space_id": w.room, "participant_id": w.H1}
    )
    assert [e["type"] for e in logged] == ["run.cancel", "membership.removed"]
    assert w.state.run("run_1").state == "cancelled"


def test_a_refused_room_operation_stops_no_run(w: Any) -> None:
    running(w)
    w.says_no(
        w.p(w.MEM),
        {"type": "membership.removed", "space_id": w.room, "participant_id": w.H1},
        "forbidden",
        "only the space's owner takes others out of it",
    )
    assert w.state.run("run_1").state == "running"


def test_archiving_cancels_every_run(w: Any) -> None:
    running(w)
    logged = w.ok(w.p(w.OWN), {"type": "space.updated", "space_id": w.room, "state": "closed"})
    assert [e["type"] for e in logged] == ["run.cancel", "space.updated"]
