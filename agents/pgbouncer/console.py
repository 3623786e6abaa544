"""The PgBouncer target's two connections: PgBouncer's admin console and PostgreSQL.

Both use psycopg 3 in autocommit with the simple query protocol (statements without
parameters, nothing prepared): all the admin console speaks. Each connection counts the
statements the agent sent, so they can be taken out of PostgreSQL's own counters. Errors
come out as the target error family (:func:`translate`).
"""

from __future__ import annotations

from typing import Any

import psycopg

from agents.targets.base import TargetError, TargetMisconfigured, TargetUnavailable

Row = tuple[Any, ...]

#: SQLSTATEs that mean the account may not do what the agent needs.
_ACCESS_SQLSTATES = frozenset({"28000", "28P01", "42501"})
#: What PostgreSQL and PgBouncer answer (connection errors carry no SQLSTATE; PgBouncer's
#: console says 08P01 for all) when the account, its password or its database is wrong:
#: retrying will not help.
_MISCONFIGURED_MESSAGES = (
    "admin access needed",
    "not allowed",
    "no such user",
    "no such database",
    "password authentication failed",
    "SASL authentication failed",
    "does not exist",
    "no pg_hba.conf entry",
    "permission denied",
)


def translate(exc: psycopg.Error, action: str) -> TargetError:
    """A driver error as a target error: a wrong account, password, right or database →
    misconfigured; anything else (refused, lost, timed out, server busy) → unavailable."""
    message = " ".join(str(exc).split())
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate in _ACCESS_SQLSTATES or any(m in message for m in _MISCONFIGURED_MESSAGES):
        return TargetMisconfigured(f"{action}: {message}")
    return TargetUnavailable(f"{action}: {message}")


class Connection:
    """One autocommit connection that counts its statements and reconnects on demand."""

    def __init__(
        self,
        conninfo: str,
        *,
        name: str,
        connect_timeout_s: float,
        options: str = "",
    ) -> None:
        self._conninfo = conninfo
        self.name = name
        self._connect_timeout_s = connect_timeout_s
        self._options = options
        self._connection: psycopg.Connection[Row] | None = None
        #: Statements sent over this object's whole life (all its connections).
        self.statements = 0

    @property
    def is_open(self) -> bool:
        return self._connection is not None and not self._connection.closed

    def open(self) -> None:
        """(Re)connect; raises a target error naming the endpoint."""
        self.close()
        kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(1, round(self._connect_timeout_s)),
            "prepare_threshold": None,
            "application_name": "pooltune-agent",
        }
        if self._options:
            kwargs["options"] = self._options
        try:
            self._connection = psycopg.connect(self._conninfo, **kwargs)
        except psycopg.Error as exc:
            raise translate(exc, f"connecting to {self.name}") from exc

    def close(self) -> None:
        if self._connection is not None:
            try:
                self._connection.close()
            except Exception:  # already closed or broken: nothing to release
                pass
            self._connection = None

    def _cursor(self, sql: str, action: str) -> psycopg.Cursor[Row]:
        if not self.is_open:
            self.open()
        assert self._connection is not None
        self.statements += 1
        try:
            return self._connection.execute(sql.encode())
        except psycopg.Error as exc:
            error = translate(exc, f"{action} on {self.name}")
            if self._connection.broken or self._connection.closed:
                self.close()
            raise error from exc

    def query(self, sql: str, action: str = "query") -> list[Row]:
        """The rows of ``sql`` (none for a command)."""
        cursor = self._cursor(sql, action)
        return list(cursor.fetchall()) if cursor.description else []

    def query_dicts(self, sql: str, action: str = "query") -> list[dict[str, Any]]:
        """The rows of ``sql`` keyed by column name: PgBouncer's SHOW commands gain columns
        from one version to the next, so they are read by name."""
        cursor = self._cursor(sql, action)
        if not cursor.description:
            return []
        names = [column.name for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def execute(self, sql: str, action: str = "command") -> None:
        self._cursor(sql, action)
