"""Create the database when it is missing, then bring its schema to the newest revision.

Run as ``python -m chips_common.db.migrate``; ``make up`` and the test harness do.
"""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg
from alembic import command
from alembic.config import Config
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


def main() -> int:
    upgrade()
    print("database is at the newest revision", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
