"""Whether a batch has door-state rows to write (docs/adr/0105): a batch with none is
written as one statement; any change the flush writes must make it say so."""

from __future__ import annotations

import pytest

from chips_eventlog.state import TABLE_NAMES, TABLES, DoorState
from chips_eventlog.state_store import WRITTEN, unflushed


def test_a_fresh_state_has_nothing_to_write() -> None:
    assert not unflushed(DoorState("ws_1", 0, "W"))


@pytest.mark.parametrize(
    "journal", ["membership_log", "credentials", "revoked", "erasures", "posted_files"]
)
def test_every_change_list_the_flush_writes_counts(journal: str) -> None:
    state = DoorState("ws_1", 0, "W")
    getattr(state, journal).append(object())
    assert unflushed(state)


@pytest.mark.parametrize("table", sorted(TABLE_NAMES))
def test_every_touched_table_counts(table: str) -> None:
    state = DoorState("ws_1", 0, "W")
    state.touched[table].add("x")
    assert unflushed(state)


def test_a_rename_counts() -> None:
    state = DoorState("ws_1", 0, "W")
    state.renamed = True
    assert unflushed(state)


def test_every_keyed_table_is_held_and_written() -> None:
    """The table list drives the flush and an erasure (docs/adr/0141): each keyed table is
    a map of the state, and each but ``devices`` (written as its credential row) has a
    way to be written."""
    state = DoorState("ws_1", 0, "W")
    for table in TABLES:
        assert isinstance(getattr(state, table.held), dict), table.name
    assert {w.table.name for w in WRITTEN} == set(TABLE_NAMES) - {"devices"}
