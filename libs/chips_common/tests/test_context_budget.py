"""The context a message.new carries, fitted to a budget: ``Budget.from_hello`` and ``fit``.

docs/product/websocket.md, What you’re told with a question: "Without it you are handed the newest
40 lines and 16,000 characters, counted as Name: words, one per line. Chips hands over 200
lines and 32,000 characters at most, and none at all for "lines": 0. The oldest go first. A
line longer than the whole budget is cut to it, so the newest line is always there.
truncated says older lines were left out".
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chips_common.rules.context import (
    DEFAULT_CHARS,
    DEFAULT_LINES,
    MAX_CHARS,
    MAX_LINES,
    Budget,
    fit,
    line_text,
)

pytestmark = pytest.mark.unit


def said(seq: int, text: str, name: str = "Priya") -> dict[str, Any]:
    return {
        "seq": seq,
        "kind": "said",
        "from": {"id": f"usr_{name.lower()}", "kind": "person", "name": name},
        "message_id": f"msg_{seq}",
        "text": text,
    }


def cost(lines: list[dict[str, Any]]) -> int:
    """What lines count against the budget: ``Name: words``, one per line."""
    return sum(len(line_text(line)) + 1 for line in lines)


def seqs(lines: list[dict[str, Any]]) -> list[int]:
    return [line["seq"] for line in lines]


# Budget.from_hello


def test_without_a_context_the_budget_is_40_lines_and_16000_chars() -> None:
    """docs/product/websocket.md, What you’re told: "Without it you are handed the newest 40 lines
    and 16,000 characters".
    """
    assert (DEFAULT_LINES, DEFAULT_CHARS) == (40, 16_000)
    for asked in [None, {}, "lots", 7, ["lines", 3]]:
        assert Budget.from_hello(asked) == Budget(40, 16_000), asked
    assert Budget() == Budget(40, 16_000)


def test_a_hello_may_ask_for_its_own_budget() -> None:
    """docs/product/websocket.md, What you’re told: "context": { "lines": 100, "chars": 32000 }."""
    assert Budget.from_hello({"lines": 100, "chars": 32_000}) == Budget(100, 32_000)
    assert Budget.from_hello({"lines": 10, "chars": 500}) == Budget(10, 500)


def test_a_budget_asking_for_one_field_keeps_the_default_for_the_other() -> None:
    """docs/product/websocket.md, What you’re told: what is not asked for is the default."""
    assert Budget.from_hello({"lines": 5}) == Budget(5, 16_000)
    assert Budget.from_hello({"chars": 800}) == Budget(40, 800)


def test_a_budget_is_at_most_200_lines_and_32000_chars() -> None:
    """docs/product/websocket.md, What you’re told: "Chips hands over 200 lines and 32,000
    characters at most".
    """
    assert (MAX_LINES, MAX_CHARS) == (200, 32_000)
    assert Budget.from_hello({"lines": 201, "chars": 32_001}) == Budget(200, 32_000)
    assert Budget.from_hello({"lines": 10**9, "chars": 10**9}) == Budget(200, 32_000)


def test_zero_lines_is_a_budget_of_none() -> None:
    """docs/product/websocket.md, What you’re told: "none at all for "lines": 0"."""
    assert Budget.from_hello({"lines": 0}).lines == 0
    assert Budget.from_hello({"lines": -5}).lines == 0


def test_a_budget_that_is_not_a_whole_number_is_the_default() -> None:
    """docs/product/websocket.md, What you’re told: lines and chars are counts; anything else is
    ignored."""
    for bad in [True, False, "10", 10.0, None, [10]]:
        assert Budget.from_hello({"lines": bad, "chars": bad}) == Budget(40, 16_000), bad


def test_a_budget_always_has_a_character_to_spend() -> None:
    """docs/product/websocket.md, What you’re told: the newest line is always there, so chars is not
    0."""
    assert Budget.from_hello({"chars": 0}).chars >= 1
    assert Budget.from_hello({"chars": -100}).chars >= 1


# line_text


def test_a_line_counts_as_name_colon_words() -> None:
    """docs/product/websocket.md, What you’re told: "counted as Name: words, one per line"."""
    assert line_text(said(1, "Their slot holds until Friday.", "Ledger")) == (
        "Ledger: Their slot holds until Friday."
    )


def test_a_line_with_nobody_behind_it_is_chips() -> None:
    """docs/product/websocket.md, What you’re told: lines such as archived are Chips's own doing."""
    assert line_text({"seq": 1, "kind": "archived"}) == "Chips: archived"


def test_a_line_without_words_counts_its_title_or_kind() -> None:
    """docs/product/websocket.md, What you’re told: "renamed: … the room’s new title"; joined and
    left."""
    renamed = {"seq": 1, "kind": "renamed", "title": "Launch", "from": {"name": "Maya"}}
    joined = {"seq": 2, "kind": "joined", "from": {"name": "Scout"}}
    assert line_text(renamed) == "Maya: Launch"
    assert line_text(joined) == "Scout: joined"


# fit


def test_no_lines_fit_nothing_and_leave_nothing_out() -> None:
    """docs/product/websocket.md, What you’re told: truncated says older lines were left out."""
    assert fit([], Budget()) == ([], False)
    assert fit([], Budget(0, 100)) == ([], False)


def test_zero_lines_hand_over_nothing() -> None:
    """docs/product/websocket.md, What you’re told: "none at all for "lines": 0"."""
    kept, truncated = fit([said(1, "hi"), said(2, "there")], Budget(0, 16_000))
    assert kept == []
    assert truncated is True


def test_what_fits_is_handed_over_whole() -> None:
    """docs/product/websocket.md, What you’re told: within the budget nothing is left out."""
    lines = [said(seq, f"line {seq}") for seq in range(1, 11)]
    kept, truncated = fit(lines, Budget())
    assert kept == lines
    assert truncated is False


def test_the_oldest_go_first_by_count() -> None:
    """docs/product/websocket.md, What you’re told: "the newest 40 lines … The oldest go first"."""
    lines = [said(seq, f"line {seq}") for seq in range(1, 51)]
    kept, truncated = fit(lines, Budget())
    assert seqs(kept) == list(range(11, 51))
    assert truncated is True


def test_the_oldest_go_first_by_characters() -> None:
    """docs/product/websocket.md, What you’re told: "16,000 characters, counted as Name: words, one
    per line. The oldest go first."
    """
    # "Priya: " + 3 characters + the line's end: 11 characters a line.
    lines = [said(seq, "abc") for seq in range(1, 6)]
    assert cost(lines[:1]) == 11
    kept, truncated = fit(lines, Budget(40, 33))
    assert seqs(kept) == [3, 4, 5]
    assert truncated is True
    kept, truncated = fit(lines, Budget(40, 32))
    assert seqs(kept) == [4, 5]
    assert truncated is True
    kept, truncated = fit(lines, Budget(40, 55))
    assert seqs(kept) == [1, 2, 3, 4, 5]
    assert truncated is False


def test_a_newest_line_longer_than_the_budget_is_cut_to_fit() -> None:
    """docs/product/websocket.md, What you’re told: "A line longer than the whole budget is cut to
    it, so the newest line is always there."
    """
    long = said(9, "x" * 500)
    kept, truncated = fit([said(8, "earlier"), long], Budget(40, 100))
    assert len(kept) == 1
    (cut,) = kept
    assert cut["seq"] == 9
    assert cut["message_id"] == long["message_id"]
    assert long["text"].startswith(cut["text"])
    assert cut["text"]
    assert cost(kept) <= 100
    assert cost(kept) == 100  # cut to the budget, not short of it
    assert cut.get("cut") is True
    assert truncated is True


def test_a_newest_line_cut_alone_leaves_nothing_out() -> None:
    """docs/product/websocket.md, What you’re told: truncated is about older lines, not the cut."""
    kept, truncated = fit([said(1, "y" * 20_000)], Budget())
    assert seqs(kept) == [1]
    assert cost(kept) <= DEFAULT_CHARS
    assert truncated is False


def test_a_line_that_fits_is_not_marked_cut() -> None:
    """docs/product/websocket.md, What you’re told: only a line longer than the budget is cut."""
    kept, _ = fit([said(1, "a" * 50), said(2, "b" * 10)], Budget(40, 30))
    assert seqs(kept) == [2]
    assert "cut" not in kept[0]
    assert kept[0]["text"] == "b" * 10


def test_fitting_leaves_the_lines_it_was_given_alone() -> None:
    """docs/product/websocket.md, What you’re told: a live delivery and a replay hand over the same
    lines.
    """
    lines = [said(1, "a" * 300), said(2, "b" * 300)]
    before = copy.deepcopy(lines)
    first = fit(lines, Budget(40, 100))
    assert lines == before
    assert fit(lines, Budget(40, 100)) == first


def test_a_newest_renamed_line_longer_than_the_budget_is_cut_to_fit() -> None:
    """docs/product/websocket.md, What you’re told: "A line longer than the whole budget is cut to
    it"; a renamed line carries "the room’s new title".
    """
    renamed = {"seq": 3, "kind": "renamed", "title": "x" * 100, "from": {"name": "Priya"}}
    kept, _ = fit([renamed], Budget(40, 50))
    assert seqs(kept) == [3]
    assert cost(kept) <= 50


def test_a_newest_line_cut_to_no_words_still_fits() -> None:
    """docs/product/websocket.md, What you’re told: "A line longer than the whole budget is cut to
    it"."""
    # "Priya: " and the line's end are 8 characters: the words are cut to nothing.
    kept, _ = fit([said(1, "hello")], Budget(40, 8))
    assert seqs(kept) == [1]
    assert cost(kept) <= 8


# Properties

NAMES = ["Priya", "Ledger", "Jacobian · mini", "Maya Chen", "J"]
LONGEST_NAME = max(len(name) for name in NAMES)


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Lines of a room, oldest first, each said with words (what can be cut)."""
    texts = draw(st.lists(st.text(min_size=1, max_size=300), max_size=60))
    names = draw(st.lists(st.sampled_from(NAMES), min_size=len(texts), max_size=len(texts)))
    return [
        said(seq, text, name) for seq, (text, name) in enumerate(zip(texts, names, strict=True))
    ]


# A budget leaves room for at least one character of words after the longest "Name: ".
budgets = st.builds(
    Budget,
    st.integers(min_value=0, max_value=MAX_LINES),
    st.integers(min_value=LONGEST_NAME + 4, max_value=4_000),
)


@given(histories(), budgets)
def test_what_is_handed_over_never_exceeds_the_budget(
    lines: list[dict[str, Any]], budget: Budget
) -> None:
    """docs/product/websocket.md, What you’re told: the lines and characters asked for, at most."""
    kept, _ = fit(lines, budget)
    assert len(kept) <= budget.lines
    assert cost(kept) <= budget.chars


@given(histories(), budgets)
def test_what_is_handed_over_is_the_newest_lines_without_a_gap(
    lines: list[dict[str, Any]], budget: Budget
) -> None:
    """docs/product/websocket.md, What you’re told: "The oldest go first", and lines "never leave a
    gap"; the one line that may be cut is the newest, alone.
    """
    kept, truncated = fit(lines, budget)
    assert seqs(kept) == seqs(lines)[len(lines) - len(kept) :]
    cut = [line for line in kept if line.get("cut")]
    if cut:
        assert kept == cut
        assert lines[-1]["text"].startswith(cut[0]["text"])
    else:
        assert kept == lines[len(lines) - len(kept) :]
    assert truncated == (len(kept) < len(lines))


@given(histories(), budgets)
def test_the_newest_line_is_always_there(lines: list[dict[str, Any]], budget: Budget) -> None:
    """docs/product/websocket.md, What you’re told: "so the newest line is always there"."""
    kept, _ = fit(lines, budget)
    if lines and budget.lines >= 1:
        assert kept
        assert kept[-1]["seq"] == lines[-1]["seq"]
        assert kept[-1]["message_id"] == lines[-1]["message_id"]


@given(histories(), budgets)
def test_only_what_does_not_fit_is_left_out(lines: list[dict[str, Any]], budget: Budget) -> None:
    """docs/product/websocket.md, What you’re told: "The oldest go first" — no sooner than they
    must."""
    kept, truncated = fit(lines, budget)
    if truncated and kept and not kept[-1].get("cut") and len(kept) < budget.lines:
        next_older = lines[len(lines) - len(kept) - 1]
        assert cost([next_older, *kept]) > budget.chars
