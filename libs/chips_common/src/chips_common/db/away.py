"""What a statement raises when Postgres is not there, told apart from a real failure.

Postgres restarting, failing over or shutting down, or a connection cut under a
statement, raise these. None of it is the request's fault: the gateway answers it
``unavailable`` with a retry hint, and the eventlog never sets a request aside for it
(tests/e2e/test_postgres_restart.py).
"""

from __future__ import annotations

import psycopg
import sqlalchemy.exc

DATABASE_AWAY: tuple[type[Exception], ...] = (
    psycopg.OperationalError,
    psycopg.InterfaceError,
    sqlalchemy.exc.OperationalError,
    sqlalchemy.exc.InterfaceError,
)


def database_away(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) says Postgres is away."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, DATABASE_AWAY):
            return True
        seen = seen.__cause__
    return False
