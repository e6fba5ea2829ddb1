"""The ledger of open pull requests (chips_common.nats.pull.Asks): pure, no NATS."""

from __future__ import annotations

import pytest

from chips_common.nats.pull import Asks, ConsumerGone


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_fresh_ledger_asks_for_a_batch_then_not_again_while_it_is_open() -> None:
    asks = Asks(8, 2.0, Clock())
    assert asks.wanted() == 8
    asks.asked(8)
    assert asks.credit() == 8 and asks.wanted() == 0


def test_messages_use_up_the_oldest_request_and_it_asks_again_below_a_batch() -> None:
    asks = Asks(4, 2.0, Clock())
    asks.asked(4)
    asks.delivered()
    assert asks.credit() == 3 and asks.wanted() == 4
    asks.asked(4)
    for _ in range(3):
        asks.delivered()
    # The first request is used up and gone; the second is whole.
    assert len(asks.open) == 1 and asks.credit() == 4 and asks.wanted() == 0


def test_a_request_timeout_or_no_messages_ends_the_oldest_only() -> None:
    asks = Asks(4, 2.0, Clock())
    asks.asked(4)
    asks.asked(4)
    asks.delivered()
    asks.status("408", "Request Timeout")
    assert asks.credit() == 4
    asks.status("404", "No Messages")
    assert asks.credit() == 0 and asks.wanted() == 4


def test_a_heartbeat_changes_nothing() -> None:
    asks = Asks(4, 2.0, Clock())
    asks.asked(4)
    asks.status("100", "Idle Heartbeat")
    assert asks.credit() == 4


def test_any_other_status_forgets_every_request() -> None:
    asks = Asks(4, 2.0, Clock())
    asks.asked(4)
    asks.asked(4)
    asks.status("409", "Leadership Change")
    assert asks.credit() == 0 and asks.wanted() == 4


def test_a_deleted_consumer_is_said_so() -> None:
    asks = Asks(4, 2.0, Clock())
    asks.asked(4)
    with pytest.raises(ConsumerGone):
        asks.status("409", "Consumer Deleted")
    assert asks.credit() == 0


def test_a_request_past_its_expiry_is_forgotten_even_when_its_answer_never_came() -> None:
    clock = Clock()
    asks = Asks(4, 2.0, clock)
    asks.asked(4)
    clock.now += 1.9
    assert asks.credit() == 4
    clock.now += 0.2
    assert asks.credit() == 0 and asks.wanted() == 4


def test_a_delivery_with_nothing_open_is_not_counted_below_zero() -> None:
    asks = Asks(4, 2.0, Clock())
    asks.delivered()
    assert asks.credit() == 0 and not asks.open


def test_a_request_nobody_serves_is_a_consumer_gone() -> None:
    asks = Asks(4, 2.0, Clock())
    asks.asked(4)
    with pytest.raises(ConsumerGone):
        asks.status("503", "")
