"""The referee's statements are built once, at import: each must compile for Postgres
with the names its callers bind (a clash with a column's own name compiles only when
first run, in the clock's look)."""

from __future__ import annotations

import pytest
from sqlalchemy.dialects import postgresql
from sqlalchemy.sql import ClauseElement

from chips_referee import consumer

pytestmark = pytest.mark.unit

STATEMENTS = {
    name: value
    for name, value in vars(consumer).items()
    if name.isupper() and isinstance(value, ClauseElement)
}


def test_there_are_statements_to_check() -> None:
    assert "TOUCH_CHECKPOINT" in STATEMENTS


@pytest.mark.parametrize("name", sorted(STATEMENTS))
def test_each_statement_compiles_for_postgres_as_executed(name: str) -> None:
    statement = STATEMENTS[name]
    names = list(statement.compile(dialect=postgresql.dialect()).params)
    # As at execution: the parameters given by these names.
    statement.compile(dialect=postgresql.dialect(), column_keys=names)


def test_the_clock_s_touch_binds_the_workspace_as_ws() -> None:
    compiled = consumer.TOUCH_CHECKPOINT.compile(dialect=postgresql.dialect())
    assert set(compiled.params) == {"ws"}
