"""What tests in every folder may ask for: a database of their own, migrated to the head.

The tests of one service against a real Postgres (the eventlog's guarded write, the
consumers' folds) each get a fresh database per module, named after their package and
dropped after it; the module is skipped when no Postgres answers
(``CHIPS_TEST_POSTGRES_URL``, the machine's by default).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import psycopg
import pytest

from chips_common.db.scratch import scratch_database

ADMIN = os.environ.get(
    "CHIPS_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


@pytest.fixture(scope="module")
def database_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh database migrated to the head, dropped after the module."""
    owner = request.path.parent.parent.name.removeprefix("chips_")
    database = scratch_database(ADMIN, f"chips_{owner}", migrate_timeout=120)
    try:
        url = database.__enter__()
    except psycopg.OperationalError as exc:
        pytest.skip(f"no Postgres to test against: {exc}")
    try:
        yield url
    finally:
        database.__exit__(None, None, None)
