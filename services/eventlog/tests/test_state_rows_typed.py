"""Each keyed door-state table's row, as ``state_store`` writes it, is a ``TypedDict`` of
that table's columns: a field the state keeps and the table lacks (or misnames) fails here,
not in Postgres (docs/adr/0150)."""

from __future__ import annotations

from typing import get_args, get_type_hints

from chips_common.db import tables as t
from chips_eventlog import state_written as state_store
from chips_eventlog.state_written import WRITTEN, CredentialRow


def _row_type(written: state_store.Written) -> type:
    (row,) = [a for a in get_args(get_type_hints(written.row)["return"]) if a is not type(None)]
    return row


def test_each_row_is_its_table_s_columns_with_its_key() -> None:
    for written in WRITTEN:
        fields = set(get_type_hints(_row_type(written)))
        columns = set(written.table.c.keys())
        assert fields <= columns, (written.table.name, fields - columns)
        assert set(written.key_columns) <= fields, written.table.name


def test_a_credential_row_is_the_credentials_columns() -> None:
    assert set(get_type_hints(CredentialRow)) <= set(t.credentials.c.keys())


def test_a_record_written_whole_is_its_row_field_for_field() -> None:
    """A record whose every field is a column is written whole: a field added to it must
    be added to its row, or it would never reach the table."""
    from dataclasses import fields

    from chips_eventlog.state_rows import Card, Invite, Lane, Run, Space

    whole = {
        Space: state_store.SpaceRow,
        Run: state_store.RunRow,
        Lane: state_store.LaneRow,
        Card: state_store.CardRow,
        Invite: state_store.InviteRow,
    }
    for record, row in whole.items():
        kept = {f.name for f in fields(record)} - {"used_seq"}  # an invite's: this replica's
        assert set(get_type_hints(row)) == kept | {"workspace_id"}, record.__name__
