"""The per-socket token bucket (a pure object)."""

from __future__ import annotations

import pytest

from chips_gateway.ratelimit import Bucket, refill, retry_after, tokens_wanted

pytestmark = pytest.mark.unit


def test_a_bucket_gives_its_burst_then_its_rate() -> None:
    bucket = Bucket(rate=10, burst=5)
    assert [bucket.take(100.0) for _ in range(5)] == [0.0] * 5
    wait = bucket.take(100.0)
    assert wait == pytest.approx(0.1)
    assert bucket.take(100.05) == pytest.approx(0.05)
    assert bucket.take(100.11) == 0.0


def test_a_bucket_refills_no_further_than_its_burst() -> None:
    assert refill(0, 0, 1000, rate=10, burst=5) == 5
    assert refill(1, 0, 0.2, rate=10, burst=5) == pytest.approx(3)
    assert refill(4, 10, 5, rate=10, burst=5) == 4  # a clock that went back adds nothing


def test_a_wait_is_told_rounded_up_to_the_millisecond_and_never_as_none() -> None:
    bucket = Bucket(rate=50, burst=1)
    assert bucket.take(10.0) == 0.0
    almost = bucket.take(10.0199999)  # a ten-thousandth of a token short
    assert 0.0 < almost < 0.0005
    assert retry_after(almost) == 0.001
    assert retry_after(0.0) == 0.001
    assert retry_after(0.0201) == 0.021
    assert retry_after(0.5) == 0.5


def test_a_take_from_redis_asks_for_the_writes_already_read_up_to_the_burst() -> None:
    assert tokens_wanted(chunk=2, ahead=0, burst=200) == 2  # one write at a time
    assert tokens_wanted(chunk=2, ahead=1, burst=200) == 2
    assert tokens_wanted(chunk=2, ahead=99, burst=200) == 100  # a burst read at once
    assert tokens_wanted(chunk=2, ahead=500, burst=200) == 200
    assert tokens_wanted(chunk=2, ahead=-3, burst=200) == 2
