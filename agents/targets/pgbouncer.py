"""PgBouncer in front of PostgreSQL.

Knobs are PgBouncer's: the ``[pgbouncer]`` settings of the catalog (``default_pool_size``,
``reserve_pool_size``, …) change with ``SET`` on the admin console; a database's own
``pool_size`` changes with an edit of its ini line and ``RELOAD`` (:mod:`agents.pgbouncer.ini`).
After a size shrinks the database's server connections are recycled (``RECONNECT``), or the
smaller size would wait for idle connections that a saturated pool never has. No tuple that
breaks the pool budget (:mod:`agents.pgbouncer.budget`) is ever applied. Counters come from
the console and from PostgreSQL itself (:mod:`agents.pgbouncer.collectors`); the agent's
connections bypass the pools. Facts and estimates: docs/pgbouncer.md.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Mapping
from pathlib import Path

from psycopg.conninfo import make_conninfo

from agents import knobs as knob_catalog
from agents.collectors import Collected, Collector, CollectorSet
from agents.config import TargetSection
from agents.hostcpu import (
    host_busy_seconds,
    memory_total_bytes,
    process_cpu_seconds,
    process_tree_cpu_seconds,
)
from agents.knobs import Engine
from agents.pgbouncer import collectors as pgb
from agents.pgbouncer import ini
from agents.pgbouncer.budget import PoolBudget, PoolPlan, budget_notes
from agents.pgbouncer.console import Connection
from agents.pgbouncer.local import is_local, pgbouncer_pid, postmaster_pid
from agents.pgbouncer.pools import PoolState, read_config, read_pool_state
from agents.pgbouncer.saved import pool_key, split_saved
from agents.targets.base import (
    KnobApplyError,
    Snapshot,
    TargetError,
    TargetInfo,
    TargetMisconfigured,
    TargetUnavailable,
)
from agents.wire import HostFacts

logger = logging.getLogger(__name__)

RULE = (
    "Σ pool sizes ≤ max_db_connections ≤ PostgreSQL max_connections − "
    "superuser_reserved_connections − reserve_connections"
)
ADMIN_HINT = (
    "add the user to `admin_users` in pgbouncer.ini and reload PgBouncer (`stats_users` "
    "may only read; the agent SETs pool sizes and RELOADs)"
)
MONITOR_HINT = "run `GRANT pg_monitor TO {user}` in PostgreSQL"


class PgBouncerTarget:
    """PgBouncer (admin console) and the PostgreSQL behind it."""

    def __init__(self, settings: TargetSection, *, tuned_knobs: list[str] | None = None) -> None:
        if settings.engine != Engine.PGBOUNCER:
            raise ValueError(f"PgBouncerTarget needs engine = pgbouncer, not {settings.engine}")
        self.settings = settings
        self.pg = settings.pgbouncer
        self.engine = Engine.PGBOUNCER
        self._tuned = tuned_knobs or [k.name for k in knob_catalog.tuned_knobs(self.engine)]
        self._console = Connection(
            make_conninfo(
                host=settings.host,
                port=settings.port,
                user=settings.user,
                password=settings.password.get_secret_value(),
                dbname=pgb.ADMIN_DATABASE,
            ),
            name=f"PgBouncer's admin console at {settings.host}:{settings.port}",
            connect_timeout_s=settings.connect_timeout_s,
        )
        self._postgres = Connection(
            make_conninfo(
                host=self.pg.postgres_host,
                port=self.pg.postgres_port,
                user=self.pg.postgres_user,
                password=self.pg.postgres_password.get_secret_value(),
                dbname=self.pg.postgres_database,
            ),
            name=f"PostgreSQL at {self.pg.postgres_host}:{self.pg.postgres_port}",
            connect_timeout_s=settings.connect_timeout_s,
            options=f"-c statement_timeout={round(settings.query_timeout_s * 1000)}",
        )
        self._scope = pgb.Scope(databases=frozenset(self.pg.pools))
        self._console_collectors: list[Collector] = [
            pgb.StatsCollector(self._scope),
            pgb.PoolsCollector(self._scope),
            pgb.ServersCollector(self._scope),
            pgb.ListsCollector(),
        ]
        self._postgres_collectors: list[Collector] = []
        self._collector_set = CollectorSet(collectors=[])
        self._info: TargetInfo | None = None
        self._bouncer_version = ""
        self._pg_version_text = ""
        self._postmaster_pid: int | None = None
        self._bouncer_pid: int | None = None
        self._config_file: Path | None = None
        self._agent_in_scope = False

    # -- connections --------------------------------------------------------------------

    @property
    def collector_stats(self) -> CollectorSet:
        return self._collector_set

    def connect(self) -> None:
        self._console.open()
        self._postgres.open()

    def close(self) -> None:
        self._console.close()
        self._postgres.close()

    # -- checks -------------------------------------------------------------------------

    def check(self, *, read_only: bool = False) -> TargetInfo:
        try:
            (row,) = self._console.query("SHOW VERSION", "reading SHOW VERSION")
        except TargetUnavailable as exc:
            if not self._console.is_open:
                raise
            raise TargetMisconfigured(
                f"{self._console.name} does not answer SHOW VERSION ({exc}): point [target] "
                "host/port at PgBouncer's listen port; the agent logs into its `pgbouncer` "
                "admin database"
            ) from exc
        self._bouncer_version = str(row[0])
        config = read_config(self._console)
        databases = {d.name: d for d in read_pool_state(self._console).databases}
        unknown = sorted(set(self.pg.pools) - set(databases))
        if unknown:
            raise TargetMisconfigured(
                f"[target.pgbouncer] pools: {', '.join(unknown)} not in PgBouncer's [databases] "
                f"(it has: {', '.join(sorted(databases)) or 'none'})"
            )
        tuned = [d for name, d in databases.items() if self._scope.includes(name)]
        self._scope.pg_databases = frozenset(d.pg_database for d in tuned)
        if not read_only:
            self._check_admin(config)
        notes = self._check_postgres()
        if self.pg.pools:
            self._config_file = ini.tuned_pool_file(
                Path(self.pg.config_file or config.get("conffile", "")),
                self.pg.pools,
                writable=not read_only,
            )
        state = self.pool_state()
        notes += budget_notes(self.budget(), state.plans(), default_plans=state.default_plans)
        if config.get("pool_mode") == "session":
            notes.append(
                "pool_mode = session: a server connection serves a client for its whole "
                "session, so a pool smaller than the clients makes clients wait for sessions "
                "to end, and a shrink waits for them too"
            )
        self._local_pids(config)
        if self._postmaster_pid is None:
            notes.append("PostgreSQL CPU time unknown: its processes are not visible here")
        self._info = TargetInfo(
            engine=self.engine,
            version=self._engine_version(),
            thread_handling=f"pool_mode={config.get('pool_mode', '?')}",
            via_extra_port=True,  # the console and PostgreSQL connections bypass the pools
            latency_available=True,
            server_pid=self._postmaster_pid,
            notes=tuple(notes),
        )
        return self._info

    def _check_admin(self, config: Mapping[str, str]) -> None:
        """SET a tuned knob to its own value: the cheapest proof of the right to change it."""
        name = knob_catalog.POOL_SIZE_KNOB[self.engine]
        try:
            self._console.execute(f"SET {name} = {int(config[name])}", f"setting {name}")
        except TargetMisconfigured:
            raise TargetMisconfigured(
                f"the console user {self.settings.user!r} may not change {name}: {ADMIN_HINT}"
            ) from None

    def _check_postgres(self) -> list[str]:
        rows = self._postgres.query_dicts(
            f"{pgb.AGENT_MARK} SELECT current_setting('server_version') AS version, "
            "current_setting('server_version_num')::int AS version_num, "
            "current_database() AS database, "
            "pg_has_role(current_user, 'pg_read_all_stats', 'MEMBER') "
            "OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS monitor, "
            "EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements') AS pgss",
            "checking PostgreSQL",
        )
        facts = rows[0]
        self._pg_version_text = str(facts["version"])
        if not facts["monitor"]:
            raise TargetMisconfigured(
                f"the PostgreSQL role {self.pg.postgres_user!r} cannot see other roles' "
                f"activity: {MONITOR_HINT.format(user=self.pg.postgres_user)}"
            )
        self._agent_in_scope = str(facts["database"]) in self._scope.pg_databases
        version = int(facts["version_num"]) // 10000
        collectors: list[Collector] = [pgb.DatabaseCollector(self._scope)]
        if version >= 14:
            collectors.append(pgb.WalCollector())
        notes = []
        if facts["pgss"]:
            try:
                self._postgres.query(f"{pgb.AGENT_MARK} SELECT 1 FROM pg_stat_statements LIMIT 1")
                collectors.append(pgb.StatementsCollector(self._scope))
            except TargetError as exc:
                notes.append(f"read share unknown: pg_stat_statements unreadable ({exc})")
        else:
            notes.append(
                "read share unknown: run `CREATE EXTENSION pg_stat_statements` in "
                f"{facts['database']} (with pg_stat_statements in shared_preload_libraries)"
            )
        collectors.append(pgb.ActivityCollector(self._scope))
        self._postgres_collectors = collectors
        self._collector_set = CollectorSet(
            collectors=[*self._console_collectors, *self._postgres_collectors]
        )
        return notes

    def budget(self) -> PoolBudget:
        """PostgreSQL's connection limit and the reserve (read now)."""
        rows = self._postgres.query_dicts(
            f"{pgb.AGENT_MARK} SELECT current_setting('max_connections')::int AS max, "
            "current_setting('superuser_reserved_connections')::int AS superuser, "
            "COALESCE(current_setting('reserved_connections', true), '0')::int AS reserved",
            "reading max_connections",
        )
        row = rows[0]
        return PoolBudget(
            max_connections=int(row["max"]),
            superuser_reserved_connections=int(row["superuser"]) + int(row["reserved"]),
            reserve=self.pg.reserve_connections,
        )

    def _local_pids(self, config: Mapping[str, str]) -> None:
        self._postmaster_pid = None
        if is_local(self.pg.postgres_host):
            (row,) = self._postgres.query(f"{pgb.AGENT_MARK} SELECT pg_backend_pid()")
            self._postmaster_pid = postmaster_pid(int(row[0]))
        self._bouncer_pid = None
        if is_local(self.settings.host):
            self._bouncer_pid = pgbouncer_pid(config.get("pidfile", ""), config.get("conffile", ""))

    def _engine_version(self) -> str:
        return f"{self._bouncer_version}; PostgreSQL {self._pg_version_text}"[:100]

    # -- facts and counters -------------------------------------------------------------

    def host_facts(self) -> HostFacts:
        if self._info is None:
            self.check(read_only=True)
        local = is_local(self.pg.postgres_host)
        return HostFacts(
            hostname=socket.gethostname() if local else self.pg.postgres_host,
            engine=self.engine,
            engine_version=self._engine_version(),
            cpu_count=self.settings.cpu_count or os.cpu_count() or 1,
            memory_bytes=(memory_total_bytes() or 0) if local else 0,
        )

    def read_counters(self) -> Snapshot:
        if self._info is None:
            self.check(read_only=True)
        self._scope.servers_known = False
        console, errors = self._run(self._console, self._console_collectors)
        if "pgbouncer_stats" in errors:
            raise TargetUnavailable(f"reading SHOW STATS: {errors['pgbouncer_stats']}")
        taken_at = time.monotonic()
        try:
            postgres, pg_errors = self._run(self._postgres, self._postgres_collectors)
        except TargetUnavailable as exc:  # PostgreSQL away: the pooler's figures still hold
            postgres, pg_errors = Collected(), {"postgres": str(exc)}
        counters = {**console.counters, **postgres.counters}
        gauges = {**console.gauges, **postgres.gauges}
        if self._agent_in_scope:
            counters["agent_pg_statements"] = float(self._postgres.statements)
        if self._bouncer_pid is not None:
            cpu = process_cpu_seconds(self._bouncer_pid)
            if cpu is not None:
                counters["pgbouncer_cpu_s"] = cpu
        server_cpu = None
        if self._postmaster_pid is not None:
            server_cpu = process_tree_cpu_seconds(self._postmaster_pid)
            # PostgreSQL shares this host: whether its CPUs are saturated bounds the start.
            host_busy = host_busy_seconds()
            if host_busy is not None:
                counters["host_busy_s"] = host_busy
        return Snapshot(
            taken_at=taken_at,
            uptime_s=counters.get("pg_uptime_s", 0.0),
            counters=counters,
            gauges=gauges,
            cpu_seconds=server_cpu,
            latency_count=counters.get("pgb_xact_count"),
            latency_total_s=counters.get("pgb_xact_time_s"),
            collector_errors={**errors, **pg_errors},
        )

    def _run(
        self, connection: Connection, collectors: list[Collector]
    ) -> tuple[Collected, dict[str, str]]:
        def lost(exc: BaseException) -> bool:
            return isinstance(exc, TargetUnavailable) and not connection.is_open

        if not connection.is_open:
            connection.open()
        return self._collector_set.run(connection, collectors, is_fatal=lost)

    # -- knobs --------------------------------------------------------------------------

    def current_tuple(self, names: list[str]) -> dict[str, int]:
        for name in names:
            knob_catalog.knob(self.engine, name)  # refuses names outside the catalog
        config = read_config(self._console)
        missing = [name for name in names if name not in config]
        if missing:
            raise TargetMisconfigured(f"PgBouncer's SHOW CONFIG has no {', '.join(missing)}")
        return {name: int(config[name]) for name in names}

    def pool_state(self) -> PoolState:
        """The pools in force (own sizes from the ini when the agent tunes per database)."""
        own = None
        if self._config_file is not None:
            try:
                own = ini.explicit_pool_sizes(self._config_file)
            except ini.IniError as exc:
                logger.warning("%s; inferring which databases set pool_size", exc)
        return read_pool_state(self._console, own_pool_sizes=own)

    def apply(self, values: Mapping[str, int], *, check_budget: bool = True) -> dict[str, int]:
        """SET ``values`` (``[pgbouncer]`` settings) and read them back; refuses a tuple
        that breaks the pool budget, naming the rule (unless ``check_budget`` is False:
        a restore puts back what the DBA had)."""
        wanted = {name: int(value) for name, value in values.items()}
        for name, value in wanted.items():
            knob = knob_catalog.knob(self.engine, name)
            if not knob.contains(value):
                raise KnobApplyError(
                    f"{name}={value} is outside [{knob.minimum}, {knob.maximum}]; not applied"
                )
        state = self.pool_state()
        if check_budget:
            self._refuse_if_over_budget(state.plans(settings=wanted), wanted)
        for name, value in wanted.items():
            self._console.execute(f"SET {name} = {value}", f"setting {name}={value}")
        self._recycle_shrunk(state.sizes())
        read_back = self.current_tuple(list(wanted))
        for name, value in wanted.items():
            if read_back[name] != value:
                logger.warning("%s: set %s, PgBouncer reads back %s", name, value, read_back[name])
        return read_back

    def _refuse_if_over_budget(self, plans: list[PoolPlan], wanted: Mapping[str, int]) -> None:
        reason = self.budget().check(plans)
        if reason is not None:
            raise KnobApplyError(f"refused {dict(wanted)}: {reason} (rule: {RULE})")

    def _recycle_shrunk(self, before: Mapping[str, int]) -> None:
        """RECONNECT the databases whose pool size went down, so it holds now."""
        after = read_pool_state(self._console).sizes()
        for name, size in after.items():
            if size < before.get(name, size):
                logger.info(
                    "pool %s shrank %s -> %s: recycling its server connections",
                    name,
                    before[name],
                    size,
                )
                self._console.execute(f'RECONNECT "{name}"', f"reconnecting {name}")

    # -- per-database pool sizes --------------------------------------------------------

    def pool_sizes(self) -> dict[str, int]:
        """The pool size in force for each tuned database."""
        sizes = self.pool_state().sizes()
        return {name: size for name, size in sizes.items() if self._scope.includes(name)}

    def own_pool_sizes(self) -> dict[str, int | None]:
        """Each tuned database's ``pool_size`` in the ini (``None``: follows the default):
        what to save before the first change and restore at the end."""
        path = self._pool_file()
        sizes = ini.explicit_pool_sizes(path)
        return {name: sizes.get(name) for name in self.pg.pools}

    def apply_pool_sizes(
        self, sizes: Mapping[str, int | None], *, check_budget: bool = True
    ) -> dict[str, int]:
        """Set the tuned databases' own ``pool_size`` (``None`` removes it: the database
        follows ``default_pool_size`` again), RELOAD, and read back the sizes in force.
        Refuses sizes that break the pool budget, naming the rule (unless
        ``check_budget`` is False)."""
        path = self._pool_file()
        not_tuned = sorted(set(sizes) - set(self.pg.pools))
        if not_tuned:
            raise KnobApplyError(
                f"{', '.join(not_tuned)} not in [target.pgbouncer] pools; not applied"
            )
        knob = knob_catalog.knob(self.engine, knob_catalog.POOL_SIZE_KNOB[self.engine])
        for name, size in sizes.items():
            if size is not None and not knob.contains(size):
                raise KnobApplyError(
                    f"pool_size of {name} = {size} is outside [{knob.minimum}, {knob.maximum}]"
                )
        state = self.pool_state()
        default = state.setting("default_pool_size")
        effective = {name: default if size is None else size for name, size in sizes.items()}
        if check_budget:
            self._refuse_if_over_budget(state.plans(pool_sizes=effective), effective)
        settings_before = read_config(self._console)
        try:
            ini.set_pool_sizes(path, sizes)
        except ini.IniError as exc:
            raise KnobApplyError(f"not applied: {exc}") from exc
        self._console.execute("RELOAD", "reloading PgBouncer")
        self._keep_runtime_settings(settings_before)
        self._recycle_shrunk(state.sizes())
        in_force = read_pool_state(self._console).sizes()
        for name, size in effective.items():
            if in_force.get(name) != size:
                raise KnobApplyError(
                    f"pool_size of {name}: wrote {size}, PgBouncer runs {in_force.get(name)}"
                )
        return {name: in_force[name] for name in sizes}

    def restore(self, values: Mapping[str, int | None]) -> dict[str, int | None]:
        """Put back a saved tuple (:mod:`agents.pgbouncer.saved`): settings by ``SET``, own
        pool sizes in the ini (``None`` removes the option). What the DBA had is put back
        even where it breaks the pool budget. Returns the values in their saved form."""
        if self._info is None:
            self.check(read_only=True)
        try:
            settings, pools = split_saved(values)
        except ValueError as exc:
            raise KnobApplyError(f"cannot restore {dict(values)}: {exc}") from exc
        restored: dict[str, int | None] = {}
        if pools:
            self.apply_pool_sizes(pools, check_budget=False)
            own = self.own_pool_sizes()
            restored |= {pool_key(name): own.get(name) for name in pools}
        if settings:
            restored |= self.apply(settings, check_budget=False)
        return restored

    def _pool_file(self) -> Path:
        if self._config_file is None:
            raise TargetMisconfigured(
                "per-database pool sizes need [target.pgbouncer] pools and a readable, "
                "writable pgbouncer.ini (check() did not find one)"
            )
        return self._config_file

    def _keep_runtime_settings(self, before: Mapping[str, str]) -> None:
        """A RELOAD resets every ``[pgbouncer]`` setting to the file; SET back the catalog's
        knobs that were in force, so the agent's reload changes only what it edited."""
        after = read_config(self._console)
        for name in knob_catalog.catalog(self.engine):
            if name in before and after.get(name) != before[name]:
                self._console.execute(f"SET {name} = {int(before[name])}", f"keeping {name}")
