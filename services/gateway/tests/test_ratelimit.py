"""The per-socket token bucket (a pure object)."""

from __future__ import annotations

import pytest

from chips_gateway.ratelimit import Bucket, refill

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
