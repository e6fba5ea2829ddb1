"""A person's notification preferences, quiet hours and when an email falls due
(chips_common.rules.notifications; docs/adr/0132)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from chips_common.rules.notifications import (
    Notification,
    Prefs,
    PrefsProblem,
    email_due,
    listed,
    needs_me,
    parse_prefs,
    quiet_until,
    shown_when_muted,
)

pytestmark = pytest.mark.unit

AT = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def test_defaults_and_a_partial_update() -> None:
    prefs = parse_prefs({})
    assert prefs.answer(600) == {
        "email": "delayed",
        "email_delay_seconds": 600,
        "push": True,
        "quiet_hours": None,
        "email_address": None,
        "time_zone": "UTC",
    }
    later = parse_prefs({"push": False, "quiet_hours": {"start": "22:00", "end": "07:00"}}, prefs)
    assert later.push is False and later.email == "delayed"
    assert parse_prefs({"email": "off"}, later).quiet_start == "22:00"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"email": "sometimes"}, "email"),
        ({"email_delay_seconds": -1}, "email_delay_seconds"),
        ({"email_delay_seconds": True}, "email_delay_seconds"),
        ({"push": "yes"}, "push"),
        ({"quiet_hours": {"start": "25:00", "end": "07:00"}}, "quiet_hours.start"),
        ({"quiet_hours": "night"}, "quiet_hours"),
        ({"time_zone": "Mars/Olympus"}, "time_zone"),
        ({"email_address": "nobody"}, "email_address"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_wrong_preferences_name_their_field(body: dict[str, object], field: str) -> None:
    with pytest.raises(PrefsProblem) as problem:
        parse_prefs(body)
    assert problem.value.field == field


def test_quiet_hours_over_midnight_in_the_person_s_zone() -> None:
    prefs = Prefs(quiet_start="22:00", quiet_end="07:00", time_zone="Europe/Paris")
    # 22:30 UTC is 23:30 in Paris: quiet until 07:00 Paris the next morning (06:00 UTC).
    night = datetime(2026, 12, 4, 22, 30, tzinfo=UTC)
    assert quiet_until(prefs, night) == datetime(2026, 12, 5, 6, 0, tzinfo=UTC)
    # 05:00 UTC is 06:00 in Paris: quiet until 07:00 the same day.
    early = datetime(2026, 12, 5, 5, 0, tzinfo=UTC)
    assert quiet_until(prefs, early) == datetime(2026, 12, 5, 6, 0, tzinfo=UTC)
    assert quiet_until(prefs, AT) is None
    assert quiet_until(Prefs(), night) is None


def test_when_an_email_falls_due() -> None:
    mail = "ada@example.com"
    assert email_due(Prefs(email_address=mail), AT, 600) == AT + timedelta(seconds=600)
    assert email_due(Prefs(email_address=mail, email_delay_seconds=2), AT, 600) == AT + timedelta(
        seconds=2
    )
    assert email_due(Prefs(email="immediate", email_address=mail), AT, 600) == AT
    assert email_due(Prefs(email="off", email_address=mail), AT, 600) is None
    assert email_due(Prefs(), AT, 600) is None  # no address
    digest = email_due(Prefs(email="digest", email_address=mail), AT, 600)
    assert digest == datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
    quiet = Prefs(email="immediate", email_address=mail, quiet_start="11:00", quiet_end="13:00")
    assert email_due(quiet, AT, 600) == datetime(2026, 12, 4, 13, 0, tzinfo=UTC)


def test_what_a_muted_room_shows_and_what_needs_me() -> None:
    assert shown_when_muted("approval", sole=True)
    assert not shown_when_muted("approval", sole=False)
    assert not shown_when_muted("mention", sole=True)
    assert needs_me("approval", read=True, done=False)
    assert not needs_me("approval", read=False, done=True)
    assert needs_me("mention", read=False, done=False)
    assert not needs_me("mention", read=True, done=False)


def _row(**changed: object) -> SimpleNamespace:
    row = {
        "id": "ntf_1",
        "kind": "approval",
        "space_id": "spc_1",
        "space_name": "Launch",
        "seq": 12,
        "ref_id": "apv_1",
        "title": "Scout asks to deploy",
        "body": "deploy to staging",
        "created_at": datetime(2026, 12, 4, 14, 0, tzinfo=timezone(timedelta(hours=1))),
        "done_at": None,
        "done_reason": None,
        # What the listed shape leaves out: the row's own bookkeeping.
        "participant_id": "prt_1",
        "push_state": "pending",
    }
    row.update(changed)
    return SimpleNamespace(**row)


def test_a_notification_is_listed_in_one_shape_with_times_in_utc() -> None:
    shown = listed(_row())
    assert set(shown) == set(Notification.__annotations__)
    assert shown["created_at"] == "2026-12-04T13:00:00Z"
    assert (shown["read_at"], shown["done_at"], shown["done_reason"]) == (None, None, None)
    assert shown["seq"] == 12 and shown["kind"] == "approval"


def test_a_listed_notification_says_when_it_was_read_and_done() -> None:
    read = datetime(2026, 12, 4, 9, 30, tzinfo=UTC)
    done = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)
    shown = listed(_row(done_at=done, done_reason="answered"), read)
    assert shown["read_at"] == "2026-12-04T09:30:00Z"
    assert (shown["done_at"], shown["done_reason"]) == ("2026-12-04T10:00:00Z", "answered")
