"""MariaDB / Percona Server target over PyMySQL.

The admin connection goes through the server's ``extra_port`` when it has one: those
connections get a thread of their own outside the pool, so the agent's queries do not
queue behind the load at a small pool size (and do not disturb what is measured).
The agent's own statements are counted and subtracted from the throughput.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pymysql
import pymysql.cursors

from agents import knobs as knob_catalog
from agents.collectors import (
    Collector,
    CollectorSet,
    GlobalStatusCollector,
    QueryResponseTimeCollector,
    Row,
    SyncWaitsCollector,
    ThreadPoolGroupsCollector,
    ThreadPoolStatsCollector,
    ThreadPoolWaitsCollector,
    sync_waits_unavailable,
)
from agents.config import TargetSection
from agents.hostcpu import memory_total_bytes, process_cpu_seconds
from agents.targets.base import (
    KnobApplyError,
    Snapshot,
    TargetInfo,
    TargetMisconfigured,
    TargetUnavailable,
)
from agents.wire import HostFacts

logger = logging.getLogger(__name__)

#: Server errors that are expected on a live server and survived with a retry.
_TRANSIENT_SERVER_ERRORS = frozenset(
    {
        1040,  # too many connections
        1053,  # server shutdown in progress
        1205,  # lock wait timeout
        1213,  # deadlock
        1927,  # connection killed
        1969,  # query interrupted by max_statement_time
    }
)
#: Server errors that mean the account may not do what the agent needs.
_ACCESS_ERRORS = frozenset({1044, 1045, 1142, 1227, 1370})

_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", ""})

MY_CNF_HINT = (
    "add `thread_handling = pool-of-threads` (and preferably `extra_port = <port>`) under "
    "[mariadbd] in my.cnf and restart the server: thread_handling cannot change at runtime"
)

SYNC_WAITS_HINT = (
    "for it (and better warm starts) add `performance_schema = ON` and "
    "`performance-schema-instrument = 'wait/synch/%=ON'` under [mariadbd] and restart"
)


def _error_code(exc: BaseException) -> int | None:
    if exc.args and isinstance(exc.args[0], int):
        return exc.args[0]
    return None


def is_connection_error(exc: BaseException) -> bool:
    """A client-side error (CR_* codes >= 2000) or a lost/closed connection."""
    if isinstance(exc, pymysql.err.InterfaceError):
        return True
    if isinstance(exc, pymysql.err.OperationalError):
        code = _error_code(exc)
        return code is None or code >= 2000 or code in _TRANSIENT_SERVER_ERRORS
    return isinstance(exc, OSError)


def translate(exc: BaseException, action: str) -> Exception:
    """Map a driver error to the target error family."""
    code = _error_code(exc)
    if code in _ACCESS_ERRORS:
        return TargetMisconfigured(f"{action}: access denied ({exc})")
    if is_connection_error(exc):
        return TargetUnavailable(f"{action}: {exc}")
    return TargetUnavailable(f"{action}: unexpected database error {exc}")


class _CountingConnection:
    """A PyMySQL connection that counts the statements the agent itself sends."""

    def __init__(self, connection: pymysql.connections.Connection[Any]) -> None:
        self.connection = connection
        self.statements = 0
        self.selects = 0

    def query(self, sql: str) -> list[Row]:
        self.statements += 1
        if sql.lstrip()[:6].upper() == "SELECT":
            self.selects += 1
        with self.connection.cursor() as cursor:
            cursor.execute(sql)
            return list(cursor.fetchall())

    def close(self) -> None:
        try:
            self.connection.close()
        except Exception:  # already closed or broken: nothing to release
            pass


def parse_version(text: str) -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", text)
    if not match:
        return (0, 0)
    return (int(match.group(1)), int(match.group(2)))


class MariaDBTarget:
    """MariaDB or Percona Server with the thread pool."""

    def __init__(self, settings: TargetSection, *, tuned_knobs: list[str] | None = None) -> None:
        self.settings = settings
        self.engine = settings.engine
        self._tuned = tuned_knobs or [k.name for k in knob_catalog.tuned_knobs(self.engine)]
        self._connection: _CountingConnection | None = None
        self._via_extra_port = False
        self._discovered_extra_port: int | None = None
        self._version_text = ""
        self._version: tuple[int, int] = (0, 0)
        self._server_pid: int | None = None
        self._collector_set = CollectorSet(
            collectors=[
                GlobalStatusCollector(),
                ThreadPoolGroupsCollector(),
                ThreadPoolStatsCollector(),
                ThreadPoolWaitsCollector(),
                QueryResponseTimeCollector(),
                SyncWaitsCollector(),
            ]
        )
        self._active_collectors: list[Collector] = []
        self._latency_available = False
        # Statements of earlier (closed) connections, so the counters stay cumulative.
        self._closed_statements = 0
        self._closed_selects = 0

    # -- connection -------------------------------------------------------------------

    @property
    def collector_stats(self) -> CollectorSet:
        return self._collector_set

    def _open(self, *, host: str, port: int, unix_socket: str | None) -> _CountingConnection:
        settings = self.settings
        timeout = max(1, round(settings.query_timeout_s))
        connection = pymysql.connect(
            host=host,
            port=port,
            unix_socket=unix_socket or None,
            user=settings.user,
            password=settings.password.get_secret_value(),
            connect_timeout=max(1, round(settings.connect_timeout_s)),
            read_timeout=timeout,
            write_timeout=timeout,
            autocommit=True,
            charset="utf8mb4",
        )
        return _CountingConnection(connection)

    def connect(self) -> None:
        """Open the admin connection, through ``extra_port`` when the server has one.

        With ``extra_port`` unset in the config, the first connection asks the server for
        its ``@@extra_port`` and later reconnections go straight there.
        """
        self.close()
        settings = self.settings
        extra_port = (
            settings.extra_port if settings.extra_port is not None else self._discovered_extra_port
        )
        if extra_port and self._open_extra(extra_port):
            return
        try:
            main = self._open(
                host=settings.host, port=settings.port, unix_socket=settings.socket or None
            )
        except pymysql.err.MySQLError as exc:
            raise translate(exc, f"connecting to {self._describe()}") from exc
        self._connection = main
        self._via_extra_port = False
        if settings.extra_port is not None or self._discovered_extra_port is not None:
            return
        try:
            (row,) = main.query("SELECT @@extra_port")
        except pymysql.err.MySQLError as exc:
            self.close()
            raise translate(exc, "reading extra_port") from exc
        self._discovered_extra_port = int(row[0] or 0)
        if not self._discovered_extra_port:
            return
        if not settings.socket and self._discovered_extra_port == settings.port:
            self._via_extra_port = True
            return
        main_connection = self._connection
        if self._open_extra(self._discovered_extra_port):
            self._forget(main_connection)
            main_connection.close()
        else:
            self._connection = main_connection

    def _open_extra(self, port: int) -> bool:
        """Connect through ``port`` (the extra port); False, with a warning, if it fails."""
        host = "127.0.0.1" if self.settings.socket else self.settings.host
        try:
            self._connection = self._open(host=host, port=port, unix_socket=None)
        except pymysql.err.MySQLError as exc:
            logger.warning(
                "cannot connect through extra_port %s (%s); using the main port, so the "
                "agent's queries may queue inside the pool",
                port,
                exc,
            )
            return False
        self._via_extra_port = True
        return True

    def _forget(self, connection: _CountingConnection) -> None:
        self._closed_statements += connection.statements
        self._closed_selects += connection.selects

    def close(self) -> None:
        if self._connection is not None:
            self._forget(self._connection)
            self._connection.close()
            self._connection = None

    def _describe(self) -> str:
        if self.settings.socket:
            return f"socket {self.settings.socket}"
        return f"{self.settings.host}:{self.settings.port}"

    def _query(self, sql: str, action: str) -> list[Row]:
        if self._connection is None:
            self.connect()
        assert self._connection is not None
        try:
            return self._connection.query(sql)
        except pymysql.err.MySQLError as exc:
            error = translate(exc, action)
            if isinstance(error, TargetUnavailable) and is_connection_error(exc):
                self.close()
            raise error from exc

    # -- checks -----------------------------------------------------------------------

    def check(self, *, read_only: bool = False) -> TargetInfo:
        rows = self._query(
            "SELECT VERSION(), @@thread_handling, @@pid_file", "reading server variables"
        )
        version, thread_handling, pid_file = rows[0]
        self._version_text = str(version)
        self._version = parse_version(self._version_text)
        if str(thread_handling) != "pool-of-threads":
            raise TargetMisconfigured(
                f"the server at {self._describe()} runs thread_handling={thread_handling!r}; "
                f"pooltune tunes the thread pool only: {MY_CNF_HINT}"
            )
        notes: list[str] = []
        if not self._via_extra_port:
            notes.append(
                "not connected through extra_port: set `extra_port` in my.cnf so the agent's "
                "queries bypass the pool it tunes"
            )
        if not read_only:
            self._check_rights()
        self._active_collectors = self._collector_set.supported(self._version)
        self._latency_available = self._setup_latency(read_only=read_only)
        if not self._latency_available:
            self._active_collectors = [
                c for c in self._active_collectors if c.name != "query_response_time"
            ]
            notes.append("latency unknown: query_response_time plugin not active")
        sync_missing = self._sync_waits_missing()
        if sync_missing is not None:
            self._active_collectors = [c for c in self._active_collectors if c.name != "sync_waits"]
            notes.append(f"synchronisation time unknown: {sync_missing}; {SYNC_WAITS_HINT}")
        self._server_pid = self._local_server_pid(str(pid_file or ""))
        if self._server_pid is None:
            notes.append("server CPU time unknown: the server process is not visible here")
        return TargetInfo(
            engine=self.engine,
            version=self._version_text,
            thread_handling=str(thread_handling),
            via_extra_port=self._via_extra_port,
            latency_available=self._latency_available,
            server_pid=self._server_pid,
            notes=tuple(notes),
        )

    def _check_rights(self) -> None:
        """Set each tuned knob to its own value: the cheapest proof of the right to change it."""
        for name in self._tuned:
            try:
                self._query(f"SET GLOBAL {name} = @@global.{name}", f"setting {name}")
            except TargetMisconfigured:
                raise TargetMisconfigured(
                    f"the account {self.settings.user!r} may not change {name}: run "
                    f"`GRANT SUPER ON *.* TO '{self.settings.user}'@'<host>'` (or "
                    "SYSTEM_VARIABLES_ADMIN on MariaDB 10.5.2+), plus PROCESS for the "
                    "thread pool tables"
                ) from None

    def _setup_latency(self, *, read_only: bool) -> bool:
        try:
            rows = self._query(
                "SELECT PLUGIN_STATUS FROM information_schema.PLUGINS "
                "WHERE PLUGIN_NAME = 'QUERY_RESPONSE_TIME'",
                "checking query_response_time",
            )
            installed = bool(rows) and str(rows[0][0]) == "ACTIVE"
            if not installed and self.settings.enable_latency and not read_only:
                logger.info("installing the query_response_time plugin (enable_latency)")
                self._query("INSTALL SONAME 'query_response_time'", "installing plugin")
                installed = True
            if not installed:
                return False
            if self.settings.enable_latency and not read_only:
                self._query("SET GLOBAL query_response_time_stats = ON", "enabling latency")
            (row,) = self._query("SELECT @@global.query_response_time_stats", "reading stats")
            return str(row[0]) in {"1", "ON"}
        except (TargetUnavailable, TargetMisconfigured) as exc:
            logger.warning("latency measurement unavailable: %s", exc)
            return False

    def _sync_waits_missing(self) -> str | None:
        try:
            assert self._connection is not None
            return sync_waits_unavailable(self._connection)
        except pymysql.err.MySQLError as exc:
            return f"performance_schema unreadable ({exc})"

    def _local_server_pid(self, pid_file: str) -> int | None:
        if self.settings.host not in _LOCAL_HOSTS and not self.settings.socket:
            return None
        try:
            pid = int(Path(pid_file).read_text().split()[0])
            command = Path(f"/proc/{pid}/comm").read_text().strip()
        except (OSError, ValueError, IndexError):
            return None
        return pid if command in {"mariadbd", "mysqld"} else None

    # -- facts and counters -----------------------------------------------------------

    def host_facts(self) -> HostFacts:
        if not self._version_text:
            self.check(read_only=True)
        local = self.settings.host in _LOCAL_HOSTS or bool(self.settings.socket)
        hostname = socket.gethostname()
        if not local:
            (row,) = self._query("SELECT @@hostname", "reading hostname")
            hostname = str(row[0])
        cpu_count = self.settings.cpu_count or os.cpu_count() or 1
        return HostFacts(
            hostname=hostname,
            engine=self.engine,
            engine_version=self._version_text,
            cpu_count=cpu_count,
            memory_bytes=(memory_total_bytes() or 0) if local else 0,
        )

    def read_counters(self) -> Snapshot:
        if self._connection is None:
            self.connect()
        if not self._active_collectors:
            self.check(read_only=True)
        connection = self._connection
        assert connection is not None
        try:
            collected, errors = self._collector_set.run(
                connection, self._active_collectors, is_fatal=is_connection_error
            )
        except pymysql.err.MySQLError as exc:
            self.close()
            raise translate(exc, "reading counters") from exc
        if "global_status" in errors:
            raise TargetUnavailable(f"reading counters: {errors['global_status']}")
        taken_at = time.monotonic()
        counters = dict(collected.counters)
        counters["agent_statements"] = float(self._closed_statements + connection.statements)
        counters["agent_selects"] = float(self._closed_selects + connection.selects)
        cpu = process_cpu_seconds(self._server_pid) if self._server_pid else None
        return Snapshot(
            taken_at=taken_at,
            uptime_s=counters.get("Uptime", 0.0),
            counters=counters,
            gauges=dict(collected.gauges),
            cpu_seconds=cpu,
            latency_count=counters.get("qrt_count") if self._latency_available else None,
            latency_total_s=counters.get("qrt_total_s") if self._latency_available else None,
            collector_errors=errors,
        )

    # -- knobs ------------------------------------------------------------------------

    def current_tuple(self, names: list[str]) -> dict[str, int]:
        for name in names:
            knob_catalog.knob(self.engine, name)  # refuses names outside the catalog
        columns = ", ".join(f"@@global.{name}" for name in names)
        (row,) = self._query(f"SELECT {columns}", "reading knobs")
        return {name: int(value) for name, value in zip(names, row, strict=True)}

    def apply(self, values: Mapping[str, int]) -> dict[str, int]:
        for name, value in values.items():
            knob = knob_catalog.knob(self.engine, name)
            if not knob.contains(int(value)):
                raise KnobApplyError(
                    f"{name}={value} is outside [{knob.minimum}, {knob.maximum}]; not applied"
                )
            self._query(f"SET GLOBAL {name} = {int(value)}", f"setting {name}={value}")
        read_back = self.current_tuple(list(values))
        for name, value in values.items():
            if read_back[name] != int(value):
                logger.warning(
                    "%s: set %s, server reads back %s (capped by the server)",
                    name,
                    value,
                    read_back[name],
                )
        return read_back
