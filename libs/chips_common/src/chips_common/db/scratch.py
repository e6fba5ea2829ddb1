"""A database of its own for a test or a bench: made, migrated to the head, dropped.

Tests of one service against Postgres and the benches that time one piece alone each
need a fresh database beside whatever else the machine's Postgres holds.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql


def plain_url(url: str) -> str:
    """SQLAlchemy's URL as psycopg itself takes it."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@contextmanager
def scratch_database(admin_url: str, prefix: str, migrate_timeout: float = 300) -> Iterator[str]:
    """The URL of a new database named ``prefix_<random>``, migrated to the head.

    ``admin_url`` is any database of the server with the right to make others. The
    database is dropped on the way out, whoever still holds a connection to it. Raises
    ``psycopg.OperationalError`` when the server cannot be reached.
    """
    name = f"{prefix}_{secrets.token_hex(4)}"
    admin = plain_url(admin_url)
    with psycopg.connect(admin, autocommit=True, connect_timeout=3) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    try:
        subprocess.run(
            [sys.executable, "-m", "chips_common.db.migrate"],
            env={**os.environ, "CHIPS_DATABASE_URL": url},
            check=True,
            capture_output=True,
            timeout=migrate_timeout,
        )
        yield url
    finally:
        with psycopg.connect(admin, autocommit=True, connect_timeout=3) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
