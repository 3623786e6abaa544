"""Client-side deadlines for psycopg: a frozen database costs seconds, never a hung worker.

``statement_timeout`` is enforced by the server, so it cannot help when the server (or the
network to it) stops answering altogether: the kernel still accepts the bytes, and a blocking
read waits forever. :class:`DeadlineConnection` bounds every wait on the server (a query, a
commit, the pool's ping) and closes the connection when the bound passes; SQLAlchemy then
sees a disconnect, drops the connection and the request answers 503.
"""

from __future__ import annotations

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


def deadline_connect_args(settings: Settings) -> dict[str, Any]:
    """libpq parameters: connect timeout, server-side statement timeout, a name in pg_stat."""
    statement_ms = max(1, round(settings.db_statement_timeout_s * 1000))
    return {
        "connect_timeout": settings.db_connect_timeout_s,
        "options": f"-c statement_timeout={statement_ms}",
        "application_name": "pooltune-service",
    }


def use_deadline_connections(engine: Engine, io_timeout_s: float) -> None:
    """Make ``engine`` open :class:`DeadlineConnection` s bounded by ``io_timeout_s``."""

    @event.listens_for(engine, "do_connect")
    def _connect(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> DeadlineConnection:
        connection = DeadlineConnection.connect(*cargs, **cparams)
        connection.io_timeout_s = io_timeout_s
        return connection
