"""A harness's name is numbered when it is taken (rules/names.py)."""

from __future__ import annotations

import pytest

from chips_common.rules.names import MAX_NAME, free_name, name_key

pytestmark = pytest.mark.unit


def test_a_free_name_is_kept() -> None:
    assert free_name("Scout", ["Arjun Rao", "Ledger"]) == "Scout"


def test_a_taken_name_is_numbered_case_and_spaces_aside() -> None:
    assert free_name("Scout", ["scout"]) == "Scout 2"
    assert free_name("Open Claw", ["OpenClaw", "openclaw 2"]) == "Open Claw 3"
    assert free_name("Scout", ["Scout", "Scout 2", "Scout 4"]) == "Scout 3"


def test_a_numbered_name_stays_within_the_longest_name() -> None:
    long = "x" * MAX_NAME
    numbered = free_name(long, [long])
    assert len(numbered) == MAX_NAME and numbered.endswith(" 2")
    assert name_key(numbered) != name_key(long)
