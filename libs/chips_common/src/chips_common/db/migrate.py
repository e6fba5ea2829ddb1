"""Create the database when it is missing, then bring its schema to the newest revision.

Run as ``python -m chips_common.db.migrate``; ``make up`` and the test harness do. With
``--wait SECONDS`` it changes nothing: it waits until the database is at the newest revision
(exit 0) or the time is up (exit 1). On Kubernetes each service's pod waits so for the
migration Job before it starts (deploy/k8s/base/wait-for-migration.yaml).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import psycopg
import sqlalchemy
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import make_url

from chips_common.config import Settings

MIGRATIONS = Path(__file__).parent / "migrations"


def ensure_database(url: str) -> None:
    """Create the configured database if the server does not have it yet."""
    parsed = make_url(url)
    name = parsed.database
    admin = parsed.set(drivername="postgresql", database="postgres")
    conninfo = admin.render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not found:
            conn.execute(f'CREATE DATABASE "{name}"')


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(settings: Settings | None = None) -> None:
    settings = settings or Settings()
    ensure_database(settings.database_url)
    # "heads": work that branched from the same revision (see versions/) applies whole.
    command.upgrade(alembic_config(settings.database_url), "heads")


def at_newest_revision(url: str) -> bool:
    """Whether the database exists and its schema is at every head of the migrations."""
    heads = set(ScriptDirectory.from_config(alembic_config(url)).get_heads())
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            current = set(MigrationContext.configure(conn).get_current_heads())
    except sqlalchemy.exc.OperationalError:
        return False  # no such database yet, or the server does not answer yet
    finally:
        engine.dispose()
    return current == heads


def wait_for_newest_revision(url: str, seconds: float, every: float = 2.0) -> bool:
    deadline = time.monotonic() + seconds
    while not at_newest_revision(url):
        if time.monotonic() >= deadline:
            return False
        time.sleep(every)
    return True


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--wait"]:
        seconds = float(args[1]) if len(args) > 1 else 600.0
        if wait_for_newest_revision(Settings().database_url, seconds):
            print("database is at the newest revision", file=sys.stderr)
            return 0
        print(f"database is not at the newest revision after {seconds:g} s", file=sys.stderr)
        return 1
    upgrade()
    print("database is at the newest revision", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
