"""Collectors of the PgBouncer target (the protocol of :mod:`agents.collectors`).

From the admin console: ``SHOW STATS`` (cumulative per database), ``SHOW POOLS`` (clients
and server connections per pool), ``SHOW SERVERS`` (the PostgreSQL backend of each server
connection) and ``SHOW LISTS``. From PostgreSQL, for what the pooler cannot see:
``pg_stat_database``, ``pg_stat_wal``, ``pg_stat_statements`` (statement kinds, when
installed) and samples of ``pg_stat_activity`` restricted to the pools' backends (what they
wait on). The counter names are the contract with :mod:`agents.pgbouncer.profile`; what each
means is in docs/pgbouncer.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agents.collectors import Collected, QueryRunner

#: PgBouncer's own database (the admin console): never a pool the agent tunes.
ADMIN_DATABASE = "pgbouncer"
#: Marks the agent's own statements on PostgreSQL so pg_stat_statements sums leave them out.
AGENT_MARK = "/* pooltune-agent */"

# SHOW STATS columns (microseconds for times) -> counter names (seconds for times).
_STATS_COLUMNS: dict[str, tuple[str, float]] = {
    "total_xact_count": ("pgb_xact_count", 1.0),
    "total_query_count": ("pgb_query_count", 1.0),
    "total_received": ("pgb_received_bytes", 1.0),
    "total_sent": ("pgb_sent_bytes", 1.0),
    "total_xact_time": ("pgb_xact_time_s", 1e-6),
    "total_query_time": ("pgb_query_time_s", 1e-6),
    "total_wait_time": ("pgb_wait_time_s", 1e-6),
}
#: Counters also kept per database (``name@database``), for one pool's throughput.
PER_DATABASE_COUNTERS = ("pgb_xact_count", "pgb_query_count", "pgb_xact_time_s", "pgb_wait_time_s")
_POOL_GAUGES = (
    "cl_active",
    "cl_waiting",
    "cl_active_cancel_req",
    "cl_waiting_cancel_req",
    "sv_active",
    "sv_idle",
    "sv_used",
    "sv_tested",
    "sv_login",
)
#: Wait classes of pg_stat_activity (``wait_event_type``) counted for active backends.
WAIT_CLASSES = ("Lock", "LWLock", "IO", "Client", "Timeout", "IPC", "BufferPin", "Activity")


@runtime_checkable
class NamedQueryRunner(Protocol):
    """A runner that returns rows keyed by column name."""

    def query_dicts(self, sql: str) -> list[dict[str, Any]]: ...


def _named(runner: QueryRunner, sql: str) -> list[dict[str, Any]]:
    if not isinstance(runner, NamedQueryRunner):
        raise TypeError("the PgBouncer collectors need a runner with query_dicts()")
    return runner.query_dicts(sql)


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _sql_list(names: Iterable[str]) -> str:
    return ", ".join("'" + name.replace("'", "''") + "'" for name in sorted(names))


@dataclass(slots=True)
class Scope:
    """What the collectors look at: the tuned PgBouncer databases, the PostgreSQL databases
    they point to and the backends of their server connections (refreshed every read)."""

    databases: frozenset[str] = frozenset()
    pg_databases: frozenset[str] = frozenset()
    server_pids: tuple[int, ...] = ()
    #: The PgBouncer database each of those backends serves (SHOW SERVERS).
    server_databases: dict[int, str] = field(default_factory=dict)
    #: Whether the server pids are known (SHOW SERVERS worked this time).
    servers_known: bool = False

    def includes(self, database: str) -> bool:
        if database == ADMIN_DATABASE:
            return False
        return not self.databases or database in self.databases


@dataclass(slots=True)
class StatsCollector:
    """``SHOW STATS``: cumulative transactions, queries, bytes and times per database."""

    scope: Scope
    name: str = "pgbouncer_stats"
    min_version: tuple[int, int] = (1, 8)

    def collect(self, runner: QueryRunner) -> Collected:
        # A database shows up in SHOW STATS once it served a client: until then it is 0.
        collected = Collected(counters={counter: 0.0 for counter, _ in _STATS_COLUMNS.values()})
        for database in self.scope.databases:
            for counter in PER_DATABASE_COUNTERS:
                collected.counters[f"{counter}@{database}"] = 0.0
        for row in _named(runner, "SHOW STATS"):
            database = str(row.get("database"))
            if not self.scope.includes(database):
                continue
            for column, (counter, scale) in _STATS_COLUMNS.items():
                value = _number(row.get(column)) * scale
                collected.counters[counter] = collected.counters.get(counter, 0.0) + value
                if counter in PER_DATABASE_COUNTERS:
                    collected.counters[f"{counter}@{database}"] = value
        return collected


@dataclass(slots=True)
class PoolsCollector:
    """``SHOW POOLS``: clients (active, waiting) and server connections by state."""

    scope: Scope
    name: str = "pgbouncer_pools"
    min_version: tuple[int, int] = (1, 8)

    def collect(self, runner: QueryRunner) -> Collected:
        gauges = dict.fromkeys((f"pgb_{g}" for g in _POOL_GAUGES), 0.0)
        gauges["pgb_maxwait_s"] = 0.0
        gauges["pgb_pools"] = 0.0
        for row in _named(runner, "SHOW POOLS"):
            database = str(row.get("database"))
            if not self.scope.includes(database):
                continue
            gauges["pgb_pools"] += 1
            pool = f"{database}/{row.get('user')}"
            for column in _POOL_GAUGES:
                value = _number(row.get(column))
                gauges[f"pgb_{column}"] += value
                if column in ("cl_active", "cl_waiting", "sv_active"):
                    gauges[f"pgb_{column}@{pool}"] = value
            wait = _number(row.get("maxwait")) + _number(row.get("maxwait_us")) / 1e6
            gauges["pgb_maxwait_s"] = max(gauges["pgb_maxwait_s"], wait)
        gauges["pgb_clients"] = sum(
            gauges[f"pgb_{column}"]
            for column in (
                "cl_active",
                "cl_waiting",
                "cl_active_cancel_req",
                "cl_waiting_cancel_req",
            )
        )
        return Collected(gauges=gauges)


@dataclass(slots=True)
class ServersCollector:
    """``SHOW SERVERS``: the PostgreSQL backend pid of each server connection of the tuned
    databases, so PostgreSQL's views can be narrowed to the pools' own backends."""

    scope: Scope
    name: str = "pgbouncer_servers"
    min_version: tuple[int, int] = (1, 8)

    def collect(self, runner: QueryRunner) -> Collected:
        pids: dict[int, str] = {}
        for row in _named(runner, "SHOW SERVERS"):
            database = str(row.get("database"))
            if self.scope.includes(database) and row.get("remote_pid"):
                pids[int(_number(row["remote_pid"]))] = database
        self.scope.server_pids = tuple(sorted(pids))
        self.scope.server_databases = pids
        self.scope.servers_known = True
        return Collected(gauges={"pgb_servers": float(len(pids))})


@dataclass(slots=True)
class ListsCollector:
    """``SHOW LISTS``: PgBouncer's internal lists (used clients and servers, logins)."""

    name: str = "pgbouncer_lists"
    min_version: tuple[int, int] = (1, 8)

    def collect(self, runner: QueryRunner) -> Collected:
        rows = _named(runner, "SHOW LISTS")
        return Collected(
            gauges={f"pgb_list_{row['list']}": _number(row.get("items")) for row in rows}
        )


_DATABASE_COLUMNS: dict[str, tuple[str, float]] = {
    "xact_commit": ("pg_xact_commit", 1.0),
    "xact_rollback": ("pg_xact_rollback", 1.0),
    "blks_read": ("pg_blks_read", 1.0),
    "blks_hit": ("pg_blks_hit", 1.0),
    "tup_returned": ("pg_tup_returned", 1.0),
    "tup_fetched": ("pg_tup_fetched", 1.0),
    "tup_inserted": ("pg_tup_inserted", 1.0),
    "tup_updated": ("pg_tup_updated", 1.0),
    "tup_deleted": ("pg_tup_deleted", 1.0),
    "deadlocks": ("pg_deadlocks", 1.0),
    "temp_bytes": ("pg_temp_bytes", 1.0),
    "blk_read_time": ("pg_blk_read_time_s", 1e-3),
    "blk_write_time": ("pg_blk_write_time_s", 1e-3),
}


@dataclass(slots=True)
class DatabaseCollector:
    """``pg_stat_database`` summed over the pools' PostgreSQL databases, and the server's
    uptime (a restart resets every counter)."""

    scope: Scope
    name: str = "pg_stat_database"
    min_version: tuple[int, int] = (12, 0)

    def collect(self, runner: QueryRunner) -> Collected:
        sums = ", ".join(f"COALESCE(SUM({column}), 0) AS {column}" for column in _DATABASE_COLUMNS)
        where = f"WHERE datname IN ({_sql_list(self.scope.pg_databases)})"
        if not self.scope.pg_databases:
            where = "WHERE datname IS NOT NULL"
        rows = _named(
            runner,
            f"{AGENT_MARK} SELECT {sums}, "
            "EXTRACT(EPOCH FROM now() - pg_postmaster_start_time()) AS uptime_s "
            f"FROM pg_stat_database {where}",
        )
        collected = Collected()
        if rows:
            row = rows[0]
            for column, (counter, scale) in _DATABASE_COLUMNS.items():
                collected.counters[counter] = _number(row.get(column)) * scale
            collected.counters["pg_uptime_s"] = _number(row.get("uptime_s"))
        return collected


@dataclass(slots=True)
class WalCollector:
    """``pg_stat_wal`` (PostgreSQL 14+): WAL records, bytes and syncs (fsyncs at commit)."""

    name: str = "pg_stat_wal"
    min_version: tuple[int, int] = (14, 0)

    def collect(self, runner: QueryRunner) -> Collected:
        rows = _named(
            runner,
            f"{AGENT_MARK} SELECT wal_records, wal_bytes, wal_write, wal_sync, wal_sync_time "
            "FROM pg_stat_wal",
        )
        collected = Collected()
        if rows:
            row = rows[0]
            collected.counters["pg_wal_records"] = _number(row.get("wal_records"))
            collected.counters["pg_wal_bytes"] = _number(row.get("wal_bytes"))
            collected.counters["pg_wal_write"] = _number(row.get("wal_write"))
            collected.counters["pg_wal_sync"] = _number(row.get("wal_sync"))
            collected.counters["pg_wal_sync_time_s"] = _number(row.get("wal_sync_time")) / 1e3
        return collected


# Statement kinds by their first keyword; a WITH is a write when it holds a DML statement.
_READ = r"^\s*(select|values|table|with)\M"
_WRITE = r"^\s*(insert|update|delete|merge|copy)\M"
_DML = r"\m(insert|update|delete|merge)\M"


@dataclass(slots=True)
class StatementsCollector:
    """``pg_stat_statements`` (when installed where the agent connects): calls of reading
    and of writing statements, and their execution time, in the pools' databases."""

    scope: Scope
    name: str = "pg_stat_statements"
    min_version: tuple[int, int] = (13, 0)

    def collect(self, runner: QueryRunner) -> Collected:
        databases = "TRUE"
        if self.scope.pg_databases:
            databases = (
                "dbid IN (SELECT oid FROM pg_database WHERE datname IN "
                f"({_sql_list(self.scope.pg_databases)}))"
            )
        is_write = f"(query ~* '{_WRITE}' OR (query ~* '^\\s*with\\M' AND query ~* '{_DML}'))"
        rows = _named(
            runner,
            f"{AGENT_MARK} SELECT "
            f"COALESCE(SUM(calls) FILTER (WHERE query ~* '{_READ}' AND NOT {is_write}), 0) "
            "AS reads, "
            f"COALESCE(SUM(calls) FILTER (WHERE {is_write}), 0) AS writes, "
            "COALESCE(SUM(calls), 0) AS calls, "
            "COALESCE(SUM(total_exec_time), 0) AS exec_ms "
            f"FROM pg_stat_statements WHERE {databases} "
            f"AND query NOT LIKE '%pooltune-agent%'",
        )
        collected = Collected()
        if rows:
            row = rows[0]
            collected.counters["pgss_read_calls"] = _number(row.get("reads"))
            collected.counters["pgss_write_calls"] = _number(row.get("writes"))
            collected.counters["pgss_calls"] = _number(row.get("calls"))
            collected.counters["pgss_exec_time_s"] = _number(row.get("exec_ms")) / 1e3
        return collected


def activity_counter(kind: str, database: str | None = None) -> str:
    """The cumulative counter of backends sampled in ``kind`` (a wait class, ``cpu``, …),
    of every tuned pool or of ``database``'s."""
    name = f"pga_{kind.lower()}"
    return f"{name}@{database}" if database else name


#: What the activity sampler counts: samples taken, backends seen, backends in a
#: transaction (active or idle in it), active ones, and each of their states.
ACTIVITY_KINDS = (
    "samples",
    "backends",
    "in_xact",
    "active",
    "cpu",
    "idle_in_xact",
    *WAIT_CLASSES,
    "other",
)


def _zero_activity() -> dict[str, float]:
    return {activity_counter(kind): 0.0 for kind in ACTIVITY_KINDS}


@dataclass(slots=True)
class ActivityCollector:
    """Samples of ``pg_stat_activity`` over the pools' backends, added up into cumulative
    counters: how many backends were sampled in a transaction, on CPU (active with no wait
    event: running or runnable) or waiting in each wait class. Over a window, Δ of one
    over Δ``pga_samples`` is the mean number of backends in that state.

    When SHOW SERVERS told which PgBouncer database each backend serves, every tuned
    database also gets its own counters (``pga_<kind>@<database>``, counted on those reads
    only), so that one pool's lock queueing is not read as another's."""

    scope: Scope
    name: str = "pg_stat_activity"
    min_version: tuple[int, int] = (10, 0)
    totals: dict[str, float] = field(default_factory=_zero_activity)

    def collect(self, runner: QueryRunner) -> Collected:
        for database in self.scope.databases:
            for kind in ACTIVITY_KINDS:
                self.totals.setdefault(activity_counter(kind, database), 0.0)
        if self.scope.servers_known:
            pids = ", ".join(str(pid) for pid in self.scope.server_pids) or "NULL"
            which = f"pid IN ({pids})"
        else:  # no SHOW SERVERS: every client backend of the pools' databases
            which = "backend_type = 'client backend'"
            if self.scope.pg_databases:
                which += f" AND datname IN ({_sql_list(self.scope.pg_databases)})"
        rows = _named(
            runner,
            f"{AGENT_MARK} SELECT pid, state, wait_event_type "
            f"FROM pg_stat_activity WHERE {which} AND pid <> pg_backend_pid()",
        )
        owners = self.scope.server_databases if self.scope.servers_known else {}
        samples: dict[str | None, dict[str, float]] = {None: _activity_sample()}
        if owners:  # the listed pools only: a lone target is the whole already
            for database in self.scope.databases:
                samples[database] = _activity_sample()
        for row in rows:
            kinds = backend_kinds(str(row.get("state") or ""), row.get("wait_event_type"))
            owner = owners.get(int(_number(row.get("pid"))))
            for key in (None, owner) if owner in samples else (None,):
                for kind in kinds:
                    samples[key][kind] += 1.0
        for pool, sample in samples.items():
            for kind, count in sample.items():
                name = activity_counter(kind, pool)
                self.totals[name] = self.totals.get(name, 0.0) + count
        return Collected(counters=dict(self.totals))


def _activity_sample() -> dict[str, float]:
    return dict.fromkeys(ACTIVITY_KINDS, 0.0) | {"samples": 1.0}


def backend_kinds(state: str, wait: object) -> tuple[str, ...]:
    """What one sampled backend counts as (:data:`ACTIVITY_KINDS`): every backend is seen;
    one in a transaction is active (on CPU or in a wait class) or idle in it."""
    if state == "idle":
        return ("backends",)
    if state != "active":  # idle in transaction: the client holds the connection
        return ("backends", "in_xact", "idle_in_xact")
    kind = "cpu" if wait is None else str(wait) if wait in WAIT_CLASSES else "other"
    return ("backends", "in_xact", "active", kind)
