"""PgBouncer's pools as they are, and as they would be after a change.

Reads ``SHOW CONFIG``, ``SHOW DATABASES`` and ``SHOW POOLS`` into one :class:`PoolState`,
which answers what each database's pool size, reserve and cap would become if some
``[pgbouncer]`` settings (``SET``) or some databases' own ``pool_size`` (ini) changed, as
:class:`~agents.pgbouncer.budget.PoolPlan` values for the budget's check.

A database follows ``default_pool_size`` unless its ``[databases]`` line sets ``pool_size``;
``SHOW DATABASES`` shows only the size in force, so which ones set it comes from the ini
when the agent can read it, else from a size that differs from the default (a database that
sets exactly the default is then taken to follow it: the plan may overestimate, never
underestimate, the connections).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.pgbouncer.budget import PoolPlan
from agents.pgbouncer.collectors import ADMIN_DATABASE
from agents.pgbouncer.console import Connection


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


@dataclass(frozen=True, slots=True)
class DatabaseState:
    """One ``[databases]`` entry as PgBouncer runs it."""

    name: str
    #: The PostgreSQL database it points to.
    pg_database: str
    pool_size: int
    #: Whether its line sets ``pool_size`` (else it follows ``default_pool_size``).
    own_pool_size: bool
    reserve_pool: int
    own_reserve_pool: bool
    #: Its own ``max_db_connections`` (0: the global one applies).
    own_max_db_connections: int
    force_user: str | None
    #: (database, user) pools PgBouncer holds for it now.
    user_pools: int


@dataclass(frozen=True, slots=True)
class PoolState:
    """``SHOW CONFIG`` values and every database but the admin console's."""

    config: Mapping[str, str]
    databases: tuple[DatabaseState, ...]

    def setting(self, name: str) -> int:
        if name not in self.config:
            raise KeyError(f"PgBouncer's SHOW CONFIG has no {name!r}")
        return _int(self.config[name])

    def database(self, name: str) -> DatabaseState:
        for database in self.databases:
            if database.name == name:
                return database
        known = ", ".join(d.name for d in self.databases) or "none"
        raise KeyError(f"PgBouncer has no database {name!r} (it has: {known})")

    def sizes(self) -> dict[str, int]:
        """The pool size in force per database."""
        return {database.name: database.pool_size for database in self.databases}

    def plans(
        self,
        *,
        settings: Mapping[str, int] | None = None,
        pool_sizes: Mapping[str, int] | None = None,
    ) -> list[PoolPlan]:
        """Every database's plan after ``settings`` (``[pgbouncer]`` values) and
        ``pool_sizes`` (databases' own ``pool_size``) took effect."""
        settings = settings or {}
        pool_sizes = pool_sizes or {}
        default_size = settings.get("default_pool_size")
        default_reserve = settings.get("reserve_pool_size")
        global_cap = settings.get("max_db_connections", self.setting("max_db_connections"))
        plans = []
        for database in self.databases:
            size = database.pool_size
            if database.name in pool_sizes:
                size = pool_sizes[database.name]
            elif default_size is not None and not database.own_pool_size:
                size = default_size
            reserve = database.reserve_pool
            if default_reserve is not None and not database.own_reserve_pool:
                reserve = default_reserve
            cap = database.own_max_db_connections or global_cap
            plans.append(
                PoolPlan(
                    database=database.name,
                    pool_size=size,
                    reserve_pool=reserve,
                    max_db_connections=cap,
                    user_pools=1 if database.force_user else max(1, database.user_pools),
                )
            )
        return plans

    def default_plans(self, default_pool_size: int) -> list[PoolPlan]:
        """Every database's plan with ``default_pool_size`` set (:meth:`plans`)."""
        return self.plans(settings={"default_pool_size": default_pool_size})


def read_config(console: Connection) -> dict[str, str]:
    """``SHOW CONFIG`` as key → value text."""
    rows = console.query_dicts("SHOW CONFIG", "reading SHOW CONFIG")
    return {str(row["key"]): "" if row.get("value") is None else str(row["value"]) for row in rows}


def read_pool_state(
    console: Connection, *, own_pool_sizes: Mapping[str, int | None] | None = None
) -> PoolState:
    """The pools now. ``own_pool_sizes`` is what the ini says (``None``: follows the
    default); without it, own sizes are inferred (module docstring)."""
    config = read_config(console)
    default_size = _int(config.get("default_pool_size"))
    default_reserve = _int(config.get("reserve_pool_size"))
    user_pools: dict[str, int] = {}
    for row in console.query_dicts("SHOW POOLS", "reading SHOW POOLS"):
        name = str(row.get("database"))
        user_pools[name] = user_pools.get(name, 0) + 1
    databases = []
    for row in console.query_dicts("SHOW DATABASES", "reading SHOW DATABASES"):
        name = str(row.get("name"))
        if name == ADMIN_DATABASE:
            continue
        size = _int(row.get("pool_size"))
        reserve = _int(row.get("reserve_pool"))
        if own_pool_sizes is not None and name in own_pool_sizes:
            own_size = own_pool_sizes[name] is not None
        else:
            own_size = size != default_size
        databases.append(
            DatabaseState(
                name=name,
                pg_database=str(row.get("database") or name),
                pool_size=size,
                own_pool_size=own_size,
                reserve_pool=reserve,
                own_reserve_pool=reserve != default_reserve,
                own_max_db_connections=_int(row.get("max_connections")),
                force_user=str(row["force_user"]) if row.get("force_user") else None,
                user_pools=user_pools.get(name, 0),
            )
        )
    return PoolState(config=config, databases=tuple(databases))
