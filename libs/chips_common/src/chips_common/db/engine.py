"""Async engines, built once per service and passed in (docs/architecture/code-style.md, A service
is wired)."""

from __future__ import annotations

from typing import TypedDict

from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from chips_common.config import Settings
from chips_common.db.direct import ConnectArgs, Direct


class EngineOptions(TypedDict, total=False):
    """:func:`build_engine`'s options, as a service passes them on (``service.worker``)."""

    pool_size: int
    connect_args: ConnectArgs
    pre_ping: bool
    autocommit: bool


def build_engine(
    settings: Settings,
    *,
    pool_size: int = 10,
    connect_args: ConnectArgs | None = None,
    pre_ping: bool = True,
    autocommit: bool = False,
) -> AsyncEngine:
    """An async engine on psycopg 3 for the configured database.

    ``pre_ping``: a connection is checked (a round trip) each time it leaves the pool. A
    hot path that cannot afford it passes False and sends its statement again once on a
    connection found dead instead (``chips_common.db.retry.once_more``). ``autocommit``:
    every statement its own transaction, with no BEGIN and ROLLBACK round trips around it,
    for readers whose every answer is one statement (one snapshot).
    """
    options = (
        [f"-c synchronous_commit={settings.pg_synchronous_commit}"]
        if settings.pg_synchronous_commit
        else []
    )
    extra: ConnectArgs = {**connect_args} if connect_args else {}
    if "options" in extra:  # the caller's server settings join the configured ones
        options.append(extra.pop("options"))
    if options:
        extra["options"] = " ".join(options)
    return create_async_engine(
        settings.database_url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=pre_ping,
        connect_args=extra,
        **({"isolation_level": "AUTOCOMMIT"} if autocommit else {}),
    )


def build_direct(settings: Settings, *, size: int = 8, options: str | None = None) -> Direct:
    """Autocommit psycopg connections for the hot statements (``chips_common.db.direct``),
    with the same server settings as :func:`build_engine`'s."""
    server = [f"-c synchronous_commit={settings.pg_synchronous_commit}"] * bool(
        settings.pg_synchronous_commit
    )
    if options:
        server.append(options)
    return Direct(settings.database_url, size=size, options=" ".join(server) or None)
