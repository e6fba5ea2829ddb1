"""What a room's job has spent, and its ceiling (rules/spend.py).

docs/product/websocket.md: "$3 unless a person in the room sets another, from $0.25 to $100 … A run
whose usage carried no cost, and that Chips could not price, counts nothing; the note says
how many did … tells every harness in the room, once per job."
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chips_common.rules.spend import (
    DEFAULT_CEILING,
    Job,
    add_usage,
    ceiling_of,
    new_job,
    spend_facts,
    spend_sentence,
    valid_ceiling,
    weigh,
)

pytestmark = pytest.mark.unit


def test_the_default_ceiling_is_three_dollars_and_the_range_is_a_quarter_to_a_hundred() -> None:
    assert ceiling_of(None) == DEFAULT_CEILING == 3.0
    assert ceiling_of(10) == 10
    assert valid_ceiling(0.25) and valid_ceiling(100)
    assert not valid_ceiling(0.24) and not valid_ceiling(100.01)


def test_80_percent_warns_once_and_100_pauses_once() -> None:
    job = new_job(62)
    told = []
    for cost in (1.0, 1.0, 0.5, 0.1, 0.5, 0.2):
        job, crossing = weigh(add_usage(job, "run_1", cost), 3.0)
        told.append(crossing.threshold if crossing else None)
    assert told == [None, None, 80, None, 100, None]


def test_a_jump_past_the_ceiling_pauses_without_a_warning_first() -> None:
    _, crossing = weigh(add_usage(new_job(1), "run_1", 5.0), 3.0)
    assert crossing and crossing.threshold == 100 and crossing.action == "pause"
    assert crossing.since_seq == 1 and crossing.spent_usd == 5.0


def test_a_run_with_no_cost_counts_nothing_and_is_told_as_uncounted() -> None:
    job = add_usage(new_job(5), "run_a", None)
    job = add_usage(job, "run_b", None)
    job = add_usage(job, "run_b", 0.1)  # priced later: counted after all
    assert job.uncounted_runs == 1
    assert spend_facts(job, 3.0) == {
        "ceiling_usd": 3.0,
        "spent_usd": 0.1,
        "since_seq": 5,
        "uncounted_runs": 1,
    }
    assert "1 run of this job reported no cost" in spend_sentence(job, 3.0)


def test_the_sentence_says_the_spend_and_from_80_percent_to_finish() -> None:
    job = add_usage(new_job(0), "r", 0.42)
    said = spend_sentence(job, 3.0)
    assert "$0.42 of the $3.00" in said and "Most of it" not in said
    assert "Most of it is spent" in spend_sentence(add_usage(job, "r", 2.0), 3.0)


@given(
    st.lists(st.one_of(st.none(), st.floats(0, 2, allow_nan=False)), max_size=40),
    st.floats(0.25, 100),
)
def test_each_threshold_is_told_at_most_once_per_job(
    costs: list[float | None], ceiling: float
) -> None:
    job: Job = new_job(0)
    told: list[int] = []
    total = Decimal(0)
    for i, cost in enumerate(costs):
        job, crossing = weigh(add_usage(job, f"run_{i % 3}", cost), ceiling)
        if cost is not None:
            total += Decimal(str(cost))
        if crossing:
            told.append(crossing.threshold)
    assert told in ([], [80], [100], [80, 100])
    assert (100 in told) == (total >= Decimal(str(ceiling)))
    assert job.spent == total
