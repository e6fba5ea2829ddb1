"""The referee's warnings and pause at the ceiling, as it decides them (chips_referee.spend;
docs/product/websocket.md, At the ceiling; docs/adr/0083).

The referee weighs a room's job as it stands each time it catches up after usage, and
appends what that calls for under a key of the room, the job and the threshold; the log
answers a key it has seen with ``duplicate``. What ends up logged is checked here against a
simple model of the product's rule: per job, 80 at most once, 100 at most once, 80 never after 100.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chips_common.db.spend_reads import JobRead
from chips_common.rules.spend import add_usage, new_job, weigh
from chips_referee.spend import crossing_events

pytestmark = pytest.mark.unit

ROOM = "spc_1"


def read(since: int, costs: list[float | None], ceiling: float = 3.0) -> JobRead:
    job = new_job(since)
    for i, cost in enumerate(costs):
        job = add_usage(job, f"run_{i % 2}", cost)
    return JobRead(job, ceiling)


def test_below_80_percent_nothing_is_told() -> None:
    assert crossing_events(ROOM, read(4, [1.0, 1.3])) is None


def test_80_percent_is_a_warning_under_the_job_s_key() -> None:
    found = crossing_events(ROOM, read(4, [1.0, 1.4]))
    assert found is not None
    key, events = found
    assert key == "spend:spc_1:4:80"
    assert events == [
        {
            "type": "budget.warning",
            "space_id": ROOM,
            "budget": {"limit_usd": 3.0, "spent_usd": 2.4},
            "threshold": 80,
            "action": "warn",
            "scope": "job",
            "since_seq": 4,
        }
    ]


def test_the_ceiling_is_the_pause_then_its_warning_under_a_key_of_its_own() -> None:
    found = crossing_events(ROOM, read(4, [2.0, None, 1.0]))
    assert found is not None
    key, events = found
    assert key == "spend:spc_1:4:100"
    assert [e["type"] for e in events] == ["exchange.set", "budget.warning"]
    assert events[0]["why"] == "spend" and events[0]["state"] == "paused"
    assert events[0]["spend"] == {
        "ceiling_usd": 3.0,
        "spent_usd": 3.0,
        "since_seq": 4,
        "uncounted_runs": 1,
    }
    assert (events[1]["threshold"], events[1]["action"]) == (100, "pause")
    # Weighed again, later in the same job: the same key, so the log takes nothing more.
    again = crossing_events(ROOM, read(4, [2.0, None, 1.0, 0.5]))
    assert again is not None and again[0] == key


# Against a model: a room's history of usage, people's acts and the referee's looks.

history_items = st.one_of(
    st.tuples(
        st.just("usage"),
        st.one_of(st.none(), st.sampled_from([0.1, 0.5, 1.0]), st.floats(0, 2, allow_nan=False)),
    ),
    st.tuples(st.sampled_from(["person", "look", "look"]), st.none()),
)


def referee_logs(history: list[tuple[str, float | None]], ceiling: float) -> list[tuple[int, int]]:
    """What the referee logs, as (job, threshold): at each look after usage it weighs the
    job as it stands and appends under its key; a key seen before logs nothing."""
    keys: set[str] = set()
    logged: list[tuple[int, int]] = []
    since, usage_since_look = 0, False
    costs: list[float | None] = []
    for seq, (kind, cost) in enumerate(history, start=1):
        if kind == "person":
            since, costs = seq, []
        elif kind == "usage":
            costs.append(cost)
            usage_since_look = True
        elif usage_since_look:
            usage_since_look = False
            found = crossing_events(ROOM, read(since, costs, ceiling))
            if found is not None and found[0] not in keys:
                keys.add(found[0])
                warning = found[1][-1]
                logged.append((int(warning["since_seq"]), int(warning["threshold"])))
    return logged


def model(history: list[tuple[str, float | None]], ceiling: float) -> list[tuple[int, int]]:
    """The product pages, plainly: a job is what follows a person's act; at each look after usage,
    its total so far is weighed; 80 is told the first time a look finds 80% or more and less
    than all of it, 100 the first time a look finds all of it, and nothing after 100."""
    limit = Decimal(str(ceiling))
    told: list[tuple[int, int]] = []
    since, total, looked_at, warned, paused = 0, Decimal(0), False, False, False
    for seq, (kind, cost) in enumerate(history, start=1):
        if kind == "person":
            since, total, warned, paused = seq, Decimal(0), False, False
        elif kind == "usage":
            total += Decimal(str(cost)) if cost is not None else 0
            looked_at = True
        elif looked_at:
            looked_at = False
            if paused:
                continue
            if total >= limit:
                told.append((since, 100))
                paused = True
            elif total * 100 >= limit * 80 and not warned:
                told.append((since, 80))
                warned = True
    return told


@settings(max_examples=300)
@given(st.lists(history_items, max_size=60), st.sampled_from([0.25, 1.0, 3.0, 10.0]))
def test_what_the_referee_logs_agrees_with_the_model(
    history: list[tuple[str, float | None]], ceiling: float
) -> None:
    logged = referee_logs(history, ceiling)
    assert logged == model(history, ceiling)
    for job in {since for since, _ in logged}:
        assert [t for s, t in logged if s == job] in ([80], [100], [80, 100])


@given(st.lists(st.one_of(st.none(), st.floats(0, 1.5, allow_nan=False)), max_size=40))
def test_looking_after_every_usage_tells_what_the_pure_fold_tells(
    costs: list[float | None],
) -> None:
    """With a look after each usage, the keys logged are the thresholds ``weigh`` folds."""
    history: list[tuple[str, float | None]] = []
    for cost in costs:
        history += [("usage", cost), ("look", None)]
    job, folded = new_job(0), []
    for i, cost in enumerate(costs):
        job, crossing = weigh(add_usage(job, f"run_{i % 2}", cost), 3.0)
        if crossing is not None:
            folded.append((0, int(crossing.threshold)))
    assert referee_logs(history, 3.0) == folded
