"""The referee's looks at a room: what it appends, under which key, and when it looks next
(chips_referee.rooms; docs/adr/0090). The appender stands in for the eventlog's answer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from chips_common.append import AppendAnswer
from chips_common.rules.lead import Room, Turn, Words, told_key, ts_of
from chips_referee.appender import Appender
from chips_referee.rooms import Clock, due_at, hand_off, tell_working

pytestmark = pytest.mark.unit

T0 = datetime(2026, 10, 2, 18, 0, tzinfo=UTC)
CLOCK = Clock(quiet=20, silent=600)


class Answers:
    """Records what was appended; answers ok, or a refusal when told to."""

    def __init__(self, refuse: bool = False) -> None:
        self.appended: list[tuple[str, list[dict[str, Any]]]] = []
        self.refuse = refuse

    @property
    def appender(self) -> Appender:
        return cast(Appender, self)

    async def append(self, workspace_id: str, key: str, events: list[dict[str, Any]]) -> Any:
        self.appended.append((key, events))
        if self.refuse:
            return AppendAnswer.refused("req_1", "invalid_event", "the room is paused")
        return AppendAnswer(request_id="req_1", ok=True, seqs=[1])


def room_with_words(at: datetime = T0) -> Room:
    agents = {"agt_j": ts_of(T0), "agt_l": ts_of(T0)}
    words = Words("msg_1", 5, "agt_j", ts_of(at))
    return Room(lead="agt_l", agents=agents, words=words)


async def test_words_nobody_took_go_to_the_lead_under_the_message_s_key() -> None:
    answers = Answers()
    room = room_with_words()
    early = await hand_off(
        answers.appender, "ws_1", "spc_1", room, T0 + timedelta(seconds=19), CLOCK
    )
    assert answers.appended == [] and early == room
    after = await hand_off(
        answers.appender, "ws_1", "spc_1", room, T0 + timedelta(seconds=20), CLOCK
    )
    ((key, events),) = answers.appended
    assert key == "lead:msg_1"
    assert events == [
        {
            "type": "lead.handed",
            "space_id": "spc_1",
            "message_id": "msg_1",
            "agent_id": "agt_l",
            "said_by": "agt_j",
            "quiet_seconds": 20,
        }
    ]
    assert after.handed == "msg_1"
    # Looked at again once the row says it was handed: nothing. (A look before the row was
    # saved appends under the same key, which the log answers duplicate: test_lead.py.)
    assert (
        await hand_off(answers.appender, "ws_1", "spc_1", after, T0 + timedelta(seconds=40), CLOCK)
        == after
    )
    assert len(answers.appended) == 1


async def test_a_refused_hand_off_is_not_tried_again() -> None:
    answers = Answers(refuse=True)
    after = await hand_off(
        answers, "ws_1", "spc_1", room_with_words(), T0 + timedelta(minutes=1), CLOCK
    )
    assert after.handed == "msg_1"
    assert due_at(after, T0 + timedelta(minutes=1), CLOCK) is None


async def test_who_works_is_told_once_per_change_under_a_stable_key() -> None:
    turn = Turn("run_1", "agt_j", ts_of(T0), ts_of(T0), 7, "Drawing")
    room = Room(agents={"agt_j": ts_of(T0), "agt_l": ts_of(T0)}, turns={"run_1": turn}, changed=7)
    answers = Answers()
    told = await tell_working(answers.appender, "ws_1", "spc_1", room, T0, CLOCK)
    again = await tell_working(answers.appender, "ws_1", "spc_1", told, T0, CLOCK)
    assert again == told
    ((key, events),) = answers.appended
    assert key == told_key("spc_1", 7, ["run_1"])
    assert events[0]["type"] == "room.working"
    assert events[0]["working"][0]["silent_at"] == ts_of(T0 + timedelta(minutes=10))
    # Ten minutes on with nothing heard: the room is idle, under a key of its own.
    later = await tell_working(
        answers.appender, "ws_1", "spc_1", told, T0 + timedelta(minutes=10), CLOCK
    )
    key, events = answers.appended[-1]
    assert key == "room:spc_1:7:-" and events[0]["type"] == "room.idle"
    assert later.told == ()


def test_the_next_look_is_the_sooner_of_a_hand_off_and_a_turn_falling_silent() -> None:
    turn = Turn("run_1", "agt_j", ts_of(T0), ts_of(T0), 7)
    room = Room(agents={"agt_j": ts_of(T0), "agt_l": ts_of(T0)}, turns={"run_1": turn})
    assert due_at(room, T0, CLOCK) == T0 + timedelta(minutes=10)
    words = room_with_words(T0 + timedelta(seconds=5))
    assert due_at(words, T0, CLOCK) == T0 + timedelta(seconds=25)
    assert due_at(Room(), T0, CLOCK) is None
