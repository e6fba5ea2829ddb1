"""Telling "Postgres is away" from a real failure (chips_common.db.away)."""

from __future__ import annotations

import psycopg
import sqlalchemy.exc

from chips_common.db.away import database_away


def test_a_cut_connection_or_a_restarting_server_is_away() -> None:
    assert database_away(psycopg.OperationalError("server closed the connection unexpectedly"))
    assert database_away(psycopg.errors.CannotConnectNow("the database system is starting up"))
    wrapped = sqlalchemy.exc.OperationalError("SELECT 1", {}, psycopg.OperationalError("gone"))
    assert database_away(wrapped)


def test_what_it_was_raised_from_counts() -> None:
    try:
        try:
            raise psycopg.OperationalError("connection is bad")
        except psycopg.OperationalError as cause:
            raise TimeoutError("the append took too long") from cause
    except TimeoutError as exc:
        assert database_away(exc)


def test_a_bad_statement_or_a_bug_is_not_away() -> None:
    assert not database_away(psycopg.errors.UniqueViolation("duplicate key"))
    assert not database_away(ValueError("a bug"))
    assert not database_away(
        sqlalchemy.exc.IntegrityError("INSERT", {}, psycopg.errors.UniqueViolation("dup"))
    )
