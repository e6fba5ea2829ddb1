"""Questions as the product has them (ADR 0131): they expire, their default is taken on
silence, and a question may take several options, logged in the order asked."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from chips_common.append import Actor
from chips_common.clock import iso

pytestmark = pytest.mark.unit

SYSTEM = Actor(kind="system", id="system")
OPTIONS = [
    {"value": "a", "label": "Acme"},
    {"value": "g", "label": "Globex"},
    {"value": "i", "label": "Initech"},
]


def ask(question_id: str = "q1", **fields: Any) -> dict[str, Any]:
    return {
        "type": "question.ask",
        "run_id": "run_1",
        "question_id": question_id,
        "prompt": "Which suppliers?",
        "options": OPTIONS,
        **fields,
    }


def expired(question_id: str = "q1") -> dict[str, Any]:
    return {"type": "question.expired", "question_id": question_id}


def answered(question_id: str = "q1", **fields: Any) -> dict[str, Any]:
    return {"type": "question.answered", "question_id": question_id, **fields}


def test_a_question_waits_thirty_minutes_unless_its_asker_says(w: Any) -> None:
    w.run("run_1")
    logged = w.ok(w.h(w.H1), ask())
    assert logged[0]["expires_at"] == iso(w.now + timedelta(minutes=30))
    assert w.state.card("question", "q1").expires_at == w.now + timedelta(minutes=30)
    w.says_no(SYSTEM, expired(), "invalid_event", "has not expired yet")
    soon = iso(w.now + timedelta(minutes=5))
    assert w.ok(w.h(w.H1), ask("q2", expires_at=soon))[0]["expires_at"] == soon


def test_an_expired_question_takes_its_default_and_no_answer_after(w: Any) -> None:
    w.run("run_1")
    w.ok(w.h(w.H1), ask(default="g", expires_at=iso(w.now - timedelta(seconds=1))))
    w.says_no(w.p(w.OWN), answered(value="a"), "invalid_event", "an expired card takes no answer")
    logged = w.ok(SYSTEM, expired())
    event = logged[0]
    assert (event["value"], event["default_taken"]) == ("g", True)
    assert event["note"] == "Nobody answered in time, so the default was taken: Globex."
    assert (event["run_id"], event["space_id"]) == ("run_1", w.room)
    w.says_no(SYSTEM, expired(), "invalid_event", "was answered already (g)")


def test_without_a_default_the_asker_goes_on_without_an_answer(w: Any) -> None:
    w.run("run_1")
    w.ok(w.h(w.H1), ask(expires_at=iso(w.now - timedelta(seconds=1))))
    event = w.ok(SYSTEM, expired())[0]
    assert "value" not in event and event["default_taken"] is False
    assert "goes on without an answer" in event["note"]


def test_only_chips_s_clock_expires_a_question(w: Any) -> None:
    w.run("run_1")
    w.ok(w.h(w.H1), ask(expires_at=iso(w.now - timedelta(seconds=1))))
    w.says_no(w.h(w.H1), expired(), "forbidden", "Chips's clock")
    w.says_no(w.p(w.OWN), expired(), "forbidden", "Chips's clock")
    w.says_no(SYSTEM, expired("q9"), "not_found", "no question q9")


def test_several_choices_are_logged_in_the_order_asked(w: Any) -> None:
    w.run("run_1")
    w.ok(w.h(w.H1), ask(multiple=True))
    event = w.ok(w.p(w.OWN), answered(values=["i", "a"]))[0]
    assert event["values"] == ["a", "i"]
    assert w.state.card("question", "q1").answer == "a, i"


def test_several_choices_only_where_the_question_takes_them(w: Any) -> None:
    w.run("run_1")
    w.ok(w.h(w.H1), ask())
    w.says_no(w.p(w.OWN), answered(values=["a", "g"]), "invalid_event", "takes one option")
    w.ok(w.h(w.H1), ask("q2", multiple=True))
    w.says_no(w.p(w.OWN), answered("q2", values=["a", "z"]), "invalid_event", "'z' is not")
    w.says_no(w.p(w.OWN), answered("q2", values=["a", "a"]), "invalid_event", "chosen once")
    w.says_no(
        w.h(w.H1),
        ask("q3", options=OPTIONS[:1], multiple=True),
        "invalid_event",
        "two options or more",
    )
