"""When the eventlog gives a failing request up (docs/adr/0025): pure rules, no infrastructure."""

from __future__ import annotations

from chips_eventlog.consumer import backoff, give_up


def test_a_request_is_tried_again_while_it_has_deliveries_and_time_left() -> None:
    assert give_up(delivered=1, max_deliver=20, age=0.0, cap=4.0) is None
    assert give_up(delivered=19, max_deliver=20, age=3.9, cap=4.0) is None


def test_a_request_is_given_up_on_its_last_delivery() -> None:
    why = give_up(delivered=20, max_deliver=20, age=0.5, cap=4.0)
    assert why is not None and "20 deliveries" in why


def test_a_request_is_given_up_once_older_than_the_cap() -> None:
    why = give_up(delivered=3, max_deliver=20, age=4.0, cap=4.0)
    assert why is not None and "4.0 s" in why and "delivery 3" in why


def test_the_backoff_starts_short_doubles_and_is_bounded() -> None:
    waits = [backoff(n) for n in range(1, 9)]
    assert waits[0] == 0.05
    assert waits == sorted(waits)
    assert max(waits) == 0.5
    assert backoff(0) == 0.05  # a message without delivery count waits like a first failure
