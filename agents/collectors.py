"""Small collectors: each reads one source of counters from the server.

A collector has a name, the minimum server version that has its source, and
``collect(runner)`` returning cumulative counters and gauges (the runner's connection
carries the statement timeout). The target
runs them all every sample and keeps per-collector success and duration statistics
(:class:`CollectorStats`), so one broken source (a missing plugin, a table the version
lacks) costs one warning and a counter, never the sample.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

logger = logging.getLogger(__name__)

Row = tuple[Any, ...]


class QueryRunner(Protocol):
    """What a collector needs from a database connection."""

    def query(self, sql: str) -> list[Row]: ...


@dataclass(slots=True)
class Collected:
    counters: dict[str, float] = field(default_factory=dict)
    gauges: dict[str, float] = field(default_factory=dict)


class Collector(Protocol):
    name: str
    min_version: tuple[int, int]

    def collect(self, runner: QueryRunner) -> Collected: ...


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


#: Status counters the profile uses (cumulative since server start).
STATUS_COUNTERS: tuple[str, ...] = (
    "Questions",
    "Queries",
    "Com_commit",
    "Com_rollback",
    "Com_select",
    "Com_insert",
    "Com_insert_select",
    "Com_update",
    "Com_update_multi",
    "Com_delete",
    "Com_delete_multi",
    "Com_replace",
    "Com_replace_select",
    "Com_show_status",
    "Innodb_buffer_pool_reads",
    "Innodb_data_fsyncs",
    "Innodb_row_lock_waits",
    "Innodb_row_lock_time",
    "Threads_created",
    "Connections",
    "Uptime",
)
#: Status values that are point readings.
STATUS_GAUGES: tuple[str, ...] = (
    "Threads_connected",
    "Threads_running",
    "Threadpool_threads",
    "Threadpool_idle_threads",
)


@dataclass(slots=True)
class GlobalStatusCollector:
    """``SHOW GLOBAL STATUS``: statement, transaction, InnoDB and thread counters."""

    name: str = "global_status"
    min_version: tuple[int, int] = (5, 5)

    def collect(self, runner: QueryRunner) -> Collected:
        wanted = STATUS_COUNTERS + STATUS_GAUGES
        names = ", ".join(f"'{n}'" for n in wanted)
        rows = runner.query(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})")
        collected = Collected()
        for variable, raw in rows:
            value = _number(raw)
            if value is None:
                continue
            if variable in STATUS_GAUGES:
                collected.gauges[variable] = value
            else:
                collected.counters[variable] = value
        return collected


@dataclass(slots=True)
class ThreadPoolGroupsCollector:
    """``information_schema.THREAD_POOL_GROUPS`` summed over the groups (gauges).

    The table always lists 128 groups whatever ``thread_pool_size`` is; unused groups
    are all zero, so sums are right.
    """

    name: str = "thread_pool_groups"
    min_version: tuple[int, int] = (10, 6)

    def collect(self, runner: QueryRunner) -> Collected:
        rows = runner.query(
            "SELECT SUM(CONNECTIONS), SUM(THREADS), SUM(ACTIVE_THREADS), SUM(STANDBY_THREADS),"
            " SUM(QUEUE_LENGTH), SUM(IS_STALLED) FROM information_schema.THREAD_POOL_GROUPS"
        )
        names = ("connections", "threads", "active_threads", "standby_threads", "queue_length")
        collected = Collected()
        if rows:
            values = rows[0]
            for name, raw in zip(names + ("stalled_groups",), values, strict=False):
                number = _number(raw)
                if number is not None:
                    collected.gauges[f"tp_{name}"] = number
        return collected


_TP_STATS_COLUMNS: tuple[str, ...] = (
    "THREAD_CREATIONS",
    "THREAD_CREATIONS_DUE_TO_STALL",
    "WAKES",
    "WAKES_DUE_TO_STALL",
    "THROTTLES",
    "STALLS",
    "POLLS_BY_LISTENER",
    "POLLS_BY_WORKER",
    "DEQUEUES_BY_LISTENER",
    "DEQUEUES_BY_WORKER",
)


@dataclass(slots=True)
class ThreadPoolStatsCollector:
    """``information_schema.THREAD_POOL_STATS`` summed over the groups (counters)."""

    name: str = "thread_pool_stats"
    min_version: tuple[int, int] = (10, 6)

    def collect(self, runner: QueryRunner) -> Collected:
        sums = ", ".join(f"SUM({c})" for c in _TP_STATS_COLUMNS)
        rows = runner.query(f"SELECT {sums} FROM information_schema.THREAD_POOL_STATS")
        collected = Collected()
        if rows:
            for column, raw in zip(_TP_STATS_COLUMNS, rows[0], strict=False):
                number = _number(raw)
                if number is not None:
                    collected.counters[f"tp_{column.lower()}"] = number
        return collected


@dataclass(slots=True)
class ThreadPoolWaitsCollector:
    """``information_schema.THREAD_POOL_WAITS``: waits by reason (row lock, disk IO, …).

    The direct IO-bound vs CPU-bound signal: many DISKIO/ROW_LOCK waits per request
    mean requests leave the CPU, so more threads than cores pay off.
    """

    name: str = "thread_pool_waits"
    min_version: tuple[int, int] = (10, 6)

    def collect(self, runner: QueryRunner) -> Collected:
        rows = runner.query("SELECT REASON, COUNT FROM information_schema.THREAD_POOL_WAITS")
        collected = Collected()
        for reason, raw in rows:
            number = _number(raw)
            if number is not None:
                collected.counters[f"tp_wait_{str(reason).lower()}"] = number
        return collected


@dataclass(slots=True)
class QueryResponseTimeCollector:
    """The ``query_response_time`` plugin's histogram: total count and total seconds.

    Mean latency over a window is Δtotal / Δcount. Only counted while
    ``query_response_time_stats`` is ON.
    """

    name: str = "query_response_time"
    min_version: tuple[int, int] = (10, 0)

    def collect(self, runner: QueryRunner) -> Collected:
        return _counters_of_one_row(
            runner,
            "SELECT SUM(COUNT), SUM(IF(TOTAL = 'TOO LONG', 0, TOTAL))"
            " FROM information_schema.QUERY_RESPONSE_TIME",
            {"qrt_count": 1.0, "qrt_total_s": 1.0},
        )


def _counters_of_one_row(runner: QueryRunner, sql: str, columns: Mapping[str, float]) -> Collected:
    """The first row of ``sql`` as counters, named and scaled by ``columns`` in column
    order; none of them when a value is missing (an empty table sums to NULL)."""
    rows = runner.query(sql)
    collected = Collected()
    if rows:
        values = [v for v in map(_number, rows[0][: len(columns)]) if v is not None]
        if len(values) == len(columns):
            for (name, scale), value in zip(columns.items(), values, strict=True):
                collected.counters[name] = value * scale
    return collected


@dataclass(slots=True)
class CollectorStats:
    """Per-collector health: how often it worked and how long it took."""

    successes: int = 0
    failures: int = 0
    last_duration_s: float = 0.0
    last_error: str = ""


#: Picoseconds per second (performance_schema timers count picoseconds).
_PICOSECONDS = 1e12


@dataclass(slots=True)
class SyncWaitsCollector:
    """performance_schema's synchronisation waits on mutexes, rw-locks and sx-locks
    (``wait/synch/{mutex,rwlock,sxlock}/%``) summed over the server: the time spent
    acquiring latches, the contention that makes more threads cost more than they bring.
    Condition variables (``wait/synch/cond/%``) are left out: they time idle threads
    waiting for work (on a 2-core MariaDB under sysbench, 0.1–0.9 ms per statement at any
    pool size, while the mutex time grew 16× from pool size 2 to 16).

    Only meaningful where ``performance_schema`` is ON and those instruments are enabled
    and timed (:func:`sync_waits_unavailable`); otherwise the sums are empty or stay at zero,
    which would read as "no contention", so the target does not run this collector.
    """

    name: str = "sync_waits"
    min_version: tuple[int, int] = (10, 0)

    def collect(self, runner: QueryRunner) -> Collected:
        return _counters_of_one_row(
            runner,
            "SELECT SUM(SUM_TIMER_WAIT), SUM(COUNT_STAR)"
            " FROM performance_schema.events_waits_summary_global_by_event_name"
            " WHERE EVENT_NAME LIKE 'wait/synch/%' AND EVENT_NAME NOT LIKE 'wait/synch/cond/%'",
            {"sync_wait_s": 1.0 / _PICOSECONDS, "sync_waits": 1.0},
        )


def sync_waits_unavailable(runner: QueryRunner) -> str | None:
    """``None`` when :class:`SyncWaitsCollector` measures something, else why not."""
    (row,) = runner.query("SELECT @@global.performance_schema")
    if str(row[0]) not in {"1", "ON"}:
        return "performance_schema is OFF"
    rows = runner.query(
        "SELECT COUNT(*) FROM performance_schema.setup_instruments"
        " WHERE NAME LIKE 'wait/synch/%' AND ENABLED = 'YES' AND TIMED = 'YES'"
    )
    if not rows or not _number(rows[0][0]):
        return "performance_schema's wait/synch instruments are not enabled and timed"
    rows = runner.query(
        "SELECT COUNT(*) FROM performance_schema.setup_consumers"
        " WHERE NAME IN ('global_instrumentation', 'thread_instrumentation') AND ENABLED = 'YES'"
    )
    if not rows or (_number(rows[0][0]) or 0) < 2:
        return "performance_schema's global or thread instrumentation consumer is off"
    return None


@dataclass(slots=True)
class CollectorSet:
    """Runs collectors that the server version supports and keeps their statistics."""

    collectors: Sequence[Collector]
    stats: dict[str, CollectorStats] = field(default_factory=dict)

    def supported(self, version: tuple[int, int]) -> list[Collector]:
        return [c for c in self.collectors if version >= c.min_version]

    def run(
        self,
        runner: QueryRunner,
        collectors: Iterable[Collector],
        *,
        is_fatal: Callable[[BaseException], bool] = lambda exc: False,
    ) -> tuple[Collected, dict[str, str]]:
        """Run ``collectors``; errors for which ``is_fatal`` holds (a lost connection)
        propagate, any other error costs only that collector's part of the sample."""
        merged = Collected()
        errors: dict[str, str] = {}
        for collector in collectors:
            stats = self.stats.setdefault(collector.name, CollectorStats())
            started = time.monotonic()
            try:
                collected = collector.collect(runner)
            except Exception as exc:  # one broken source must not cost the sample
                stats.failures += 1
                stats.last_error = str(exc)
                errors[collector.name] = str(exc)
                if is_fatal(exc):
                    raise
                logger.warning("collector %s failed: %s", collector.name, exc)
                continue
            finally:
                stats.last_duration_s = time.monotonic() - started
            stats.successes += 1
            merged.counters.update(collected.counters)
            merged.gauges.update(collected.gauges)
        return merged, errors
