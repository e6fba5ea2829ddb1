"""Where a reply on a run is said, decided without Postgres (rules/runs.py).

docs/product/jacobian-channel.md, "reply: message.post, on the run": the run's room. A run nobody
started is not_found, another harness's run forbidden, and a space_id other than the
run's room invalid_event, each with the reason.
"""

from __future__ import annotations

import pytest

from chips_common.append import Actor
from chips_common.events import said_on_run
from chips_eventlog.refused import Refused
from chips_eventlog.rules.runs import room_of_reply
from chips_eventlog.state import Run

pytestmark = pytest.mark.unit

RUN = Run("run_1", "spc_shop", "hrn_j", "running")
JACOBIAN = Actor(kind="harness", id="hrn_j")


def refusal(run: Run | None, named: object, actor: Actor = JACOBIAN) -> Refused:
    with pytest.raises(Refused) as refused:
        room_of_reply(run, "run_1", named, actor)
    return refused.value


def test_a_reply_on_the_run_is_said_in_its_room() -> None:
    assert room_of_reply(RUN, "run_1", None, JACOBIAN) == "spc_shop"
    assert room_of_reply(RUN, "run_1", "spc_shop", JACOBIAN) == "spc_shop"


def test_a_person_may_say_something_on_a_run_of_their_room() -> None:
    # Whether they are in the room is the post's own rule, decided after.
    assert room_of_reply(RUN, "run_1", None, Actor(kind="person", id="usr_a")) == "spc_shop"


def test_a_run_nobody_started_is_not_found() -> None:
    refused = refusal(None, None)
    assert (refused.code, refused.field) == ("not_found", "run_id")
    assert refused.message == "no run run_1 was started in this workspace"


def test_another_harness_s_run_is_forbidden() -> None:
    refused = refusal(RUN, None, Actor(kind="harness", id="hrn_ledger"))
    assert (refused.code, refused.field) == ("forbidden", "run_id")
    assert "another harness's run" in refused.message


def test_a_space_id_other_than_the_run_s_is_refused() -> None:
    refused = refusal(RUN, "spc_home")
    assert (refused.code, refused.field) == ("invalid_event", "space_id")
    assert "run_1 is a run of another space" in refused.message


def test_which_posts_leave_their_room_to_the_run() -> None:
    assert said_on_run({"type": "message.post", "run_id": "run_1", "text": "Hi"})
    assert not said_on_run({"type": "message.post", "run_id": "run_1", "space_id": "spc_a"})
    assert not said_on_run({"type": "message.post", "text": "Hi"})
    assert not said_on_run({"type": "step.log", "run_id": "run_1"})
