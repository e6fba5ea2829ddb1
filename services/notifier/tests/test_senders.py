"""When an email or a push is sent, and how the failures wait (chips_notifier.senders;
docs/adr/0132)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from chips_common.rules.notifications import Prefs
from chips_notifier.mail import Mail, Smtp, build
from chips_notifier.push import outcome_of
from chips_notifier.senders import (
    Facts,
    backoff,
    decide_email,
    decide_push,
    mails_of,
    stale_look_due,
)

pytestmark = pytest.mark.unit

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
MAIL = Prefs(email_address="ada@example.com")
DAY = 86400.0


def facts(**change: object) -> Facts:
    base = {
        "kind": "approval",
        "sole": True,
        "created_at": NOW - timedelta(seconds=5),
        "read": False,
        "done": False,
        "muted": False,
        "prefs": MAIL,
    }
    return Facts(**{**base, **change})  # type: ignore[arg-type]


def test_an_email_waits_for_the_delay_then_goes() -> None:
    assert decide_email(facts(), NOW, 2, DAY) == ("send", None)
    assert decide_email(facts(), NOW, 600, DAY) == ("wait", NOW + timedelta(seconds=595))


@pytest.mark.parametrize(
    "change",
    [
        {"read": True},
        {"done": True},
        {"muted": True, "kind": "mention"},
        {"muted": True, "sole": False},
        {"prefs": Prefs(email="off", email_address="ada@example.com")},
        {"prefs": Prefs()},  # no address
        {"created_at": NOW - timedelta(days=2)},  # stale: a rebuild does not mail the past
    ],
)
def test_what_is_never_mailed(change: dict[str, object]) -> None:
    assert decide_email(facts(**change), NOW, 2, DAY) == ("skip", None)


def test_a_muted_room_still_mails_what_only_i_answer() -> None:
    assert decide_email(facts(muted=True), NOW, 2, DAY) == ("send", None)


def test_a_push_goes_at_once_unless_quiet_or_unwanted() -> None:
    assert decide_push(facts(), NOW, DAY, subscribed=True) == "send"
    assert decide_push(facts(), NOW, DAY, subscribed=False) == "skip"
    assert decide_push(facts(prefs=Prefs(push=False)), NOW, DAY, True) == "skip"
    quiet = Prefs(quiet_start="11:00", quiet_end="13:00")
    assert decide_push(facts(prefs=quiet), NOW, DAY, True) == "skip"
    assert decide_push(facts(read=True), NOW, DAY, True) == "skip"


def test_backoff_doubles_up_to_ten_minutes() -> None:
    assert [backoff(n) for n in (1, 2, 3, 4)] == [5.0, 10.0, 20.0, 40.0]
    assert backoff(20) == 600.0


def test_push_outcomes() -> None:
    assert [outcome_of(s) for s in (201, 404, 410, 400, 429, 503)] == [
        "sent",
        "gone",
        "gone",
        "refused",
        "retry",
        "retry",
    ]


def row(n: int) -> SimpleNamespace:
    return SimpleNamespace(
        id=f"ntf_{n}",
        workspace_id="ws_1",
        participant_id="usr_1",
        space_id="spc_1",
        seq=n,
        title=f"title {n}",
        body=f"body {n}",
    )


def test_one_email_each_or_one_digest_per_person() -> None:
    each = mails_of("https://chips.example", [(row(1), facts()), (row(2), facts())], 600)
    assert [m.subject for m, _ in each] == ["title 1", "title 2"]
    assert "https://chips.example/#/room/spc_1/at/1" in each[0][0].text
    digest = Prefs(email="digest", email_address="ada@example.com")
    both = mails_of("https://c", [(row(1), facts(prefs=digest)), (row(2), facts(prefs=digest))], 0)
    ((mail, rows),) = both
    assert mail.subject == "2 things waiting for you in Chips" and len(rows) == 2
    assert "title 1" in mail.text and "title 2" in mail.text


def test_an_email_names_itself_by_its_notification() -> None:
    smtp = Smtp("h", 25, "", "", "Chips <chips@example.com>", "auto", False, 5)
    raw = build(smtp, Mail("ada@example.com", "Subject", "Words", "ntf_1"))
    assert b"Message-ID: <ntf_1@example.com>" in raw and b"To: ada@example.com" in raw


def test_dead_senders_claims_are_looked_for_every_quarter_of_their_age_not_every_tick() -> None:
    after = 25.0
    assert stale_look_due(None, NOW, after) is True  # the first tick looks
    assert stale_look_due(NOW, NOW + timedelta(seconds=0.5), after) is False
    assert stale_look_due(NOW, NOW + timedelta(seconds=6), after) is False
    assert stale_look_due(NOW, NOW + timedelta(seconds=6.25), after) is True
    assert stale_look_due(NOW, NOW - timedelta(seconds=1), after) is True  # the clock went back
