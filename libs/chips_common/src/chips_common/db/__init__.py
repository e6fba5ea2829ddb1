"""Postgres wiring: tables, engine, migrations."""
