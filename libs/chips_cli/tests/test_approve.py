"""``chips approve``: what it says of an approval that is not waiting."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from chips_cli.people import not_waiting

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
NAMES = {"usr_1": "Arjun Rao"}


def card(**more: Any) -> dict[str, Any]:
    return {"id": "apv_1", "answered_by": None, "answer": None, "expires_at": None, **more}


def test_one_not_in_your_rooms_is_not_found() -> None:
    assert not_waiting("apv_1", None, None, NAMES, NOW) == (
        "not_found",
        "no approval apv_1 was asked in your rooms or their threads",
    )


def test_a_decided_one_names_who_decided_and_how() -> None:
    code, words = not_waiting(
        "apv_1", card(answered_by="usr_1", answer={"decision": "deny"}), "running", NAMES, NOW
    )
    assert (code, words) == (
        "not_waiting",
        "approval apv_1 was decided already: denied by Arjun Rao",
    )
    _, words = not_waiting(
        "apv_1", card(answered_by="usr_9", answer={"decision": "approve"}), "running", {}, NOW
    )
    assert words == "approval apv_1 was decided already: approved by usr_9"


def test_an_expired_one_says_when() -> None:
    expired = card(expires_at="2026-12-03T11:00:00+00:00")
    assert not_waiting("apv_1", expired, "running", NAMES, NOW) == (
        "not_waiting",
        "approval apv_1 expired at 2026-12-03T11:00:00+00:00: nobody decides it now",
    )


def test_one_whose_run_ended_is_closed() -> None:
    later = card(expires_at="2026-12-03T13:00:00+00:00")
    assert not_waiting("apv_1", later, "completed", NAMES, NOW) == (
        "not_waiting",
        "approval apv_1 is closed: the run that asked it ended",
    )
    assert not_waiting("apv_1", card(), "paused", NAMES, NOW)[1].endswith("look again")
