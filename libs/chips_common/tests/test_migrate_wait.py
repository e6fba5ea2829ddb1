"""``python -m chips_common.db.migrate --wait``: what a service's pod runs before it starts on
Kubernetes, so that it starts only once the migration Job brought the schema to the newest
revision. It waits; it never migrates."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from sqlalchemy.engine import make_url

from chips_common.db.migrate import at_newest_revision, main, wait_for_newest_revision


def test_a_migrated_database_is_at_its_newest_revision(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert at_newest_revision(database_url)
    monkeypatch.setenv("CHIPS_DATABASE_URL", database_url)
    assert main(["--wait", "0"]) == 0


def test_a_missing_or_empty_database_is_waited_for_and_left_as_it_is(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"chips_wait_{uuid.uuid4().hex[:12]}"
    url = make_url(database_url).set(database=name).render_as_string(hide_password=False)
    admin = make_url(database_url).set(drivername="postgresql", database="postgres")
    assert not at_newest_revision(url), "no such database yet"
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
        try:
            assert not wait_for_newest_revision(url, 0.3, every=0.1)
            monkeypatch.setenv("CHIPS_DATABASE_URL", url)
            assert main(["--wait", "0.2"]) == 1
            target = make_url(url).set(drivername="postgresql")
            with psycopg.connect(target.render_as_string(hide_password=False)) as db:
                tables = db.execute(
                    "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
                ).fetchone()
            assert tables == (0,), "waiting created tables"
        finally:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
