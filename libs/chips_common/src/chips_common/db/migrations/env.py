"""Alembic environment: synchronous psycopg, the URL from the caller's config."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from chips_common.db.tables import metadata

url = context.config.get_main_option("sqlalchemy.url")
assert url is not None
engine = create_engine(url)
with engine.connect() as connection:
    context.configure(connection=connection, target_metadata=metadata)
    with context.begin_transaction():
        context.run_migrations()
engine.dispose()
