"""Client-side deadlines for psycopg: a frozen database costs seconds, never a hung worker.

``statement_timeout`` is enforced by the server, so it cannot help when the server (or the
network to it) stops answering altogether: the kernel still accepts the bytes, and a blocking
read waits forever. :class:`DeadlineConnection` bounds every wait on the server (a query, a
commit, the pool's ping) and closes the connection when the bound passes; SQLAlchemy then
sees a disconnect, drops the connection and the request answers 503.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
import psycopg.errors
from sqlalchemy import event
from sqlalchemy.engine import Engine

from service.config import Settings

#: psycopg raises this (an OperationalError) when a wait passes its timeout.
_WAIT_TIMEOUT: type[BaseException] = getattr(
    psycopg.errors, "_WaitTimeout", psycopg.errors.OperationalError
)
_INTERVAL_S = 0.1


class DeadlineConnection(psycopg.Connection[Any]):
    """A psycopg connection whose every exchange with the server has a deadline."""

    io_timeout_s: float | None = None

    def wait(self, gen: Any, interval: float = _INTERVAL_S, timeout: float | None = None) -> Any:
        limit = timeout if timeout is not None else self.io_timeout_s
        try:
            return super().wait(gen, interval=interval, timeout=limit)
        except _WAIT_TIMEOUT as exc:
            # Half a protocol exchange is in flight: the connection cannot be reused.
            self.pgconn.finish()
            raise psycopg.OperationalError(
                f"the database did not answer within {limit:.1f} s; connection closed"
            ) from exc


class AsyncDeadlineConnection(psycopg.AsyncConnection[Any]):
    """The asyncio twin of :class:`DeadlineConnection` (the hot routes' engine)."""

    io_timeout_s: float | None = None

    async def wait(
        self, gen: Any, interval: float = _INTERVAL_S, timeout: float | None = None
    ) -> Any:
        limit = timeout if timeout is not None else self.io_timeout_s
        try:
            return await super().wait(gen, interval=interval, timeout=limit)
        except _WAIT_TIMEOUT as exc:
            self.pgconn.finish()
            raise psycopg.OperationalError(
                f"the database did not answer within {limit:.1f} s; connection closed"
            ) from exc


def deadline_connect_args(settings: Settings) -> dict[str, Any]:
    """libpq parameters: connect timeout, server-side statement timeout, a name in pg_stat.

    Behind a transaction-pooling PgBouncer (``db_pgbouncer``) the startup ``options`` are
    not passed on (PgBouncer refuses them), so the statement timeout is the role's
    (``ALTER ROLE ... SET statement_timeout``; docs/service.md), and psycopg never prepares
    statements: a prepared statement lives on one server connection, and the next
    transaction may get another.
    """
    args: dict[str, Any] = {
        "connect_timeout": settings.db_connect_timeout_s,
        "application_name": "pooltune-service",
    }
    if settings.db_pgbouncer:
        args["prepare_threshold"] = None
    else:
        statement_ms = max(1, round(settings.db_statement_timeout_s * 1000))
        args["options"] = f"-c statement_timeout={statement_ms}"
    return args


def use_deadline_connections(engine: Engine, io_timeout_s: float) -> None:
    """Make ``engine`` open :class:`DeadlineConnection` s bounded by ``io_timeout_s``."""

    @event.listens_for(engine, "do_connect")
    def _connect(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> DeadlineConnection:
        connection = DeadlineConnection.connect(*cargs, **cparams)
        connection.io_timeout_s = io_timeout_s
        return connection


def async_deadline_creator(
    conninfo: str, connect_args: dict[str, Any], io_timeout_s: float
) -> Callable[[], Awaitable[AsyncDeadlineConnection]]:
    """``create_async_engine(async_creator=...)``: connections bounded by ``io_timeout_s``."""

    async def connect() -> AsyncDeadlineConnection:
        connection = await AsyncDeadlineConnection.connect(conninfo, **connect_args)
        connection.io_timeout_s = io_timeout_s
        return connection

    return connect
