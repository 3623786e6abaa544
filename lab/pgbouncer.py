"""Private PgBouncers in front of a lab PostgreSQL: their own ini, auth file, admin and
stats users, pool mode and several ``[databases]`` entries (one pool each per user), on a
free port. See docs/pgbouncer.md.

PgBouncer refuses to run as root: when this process is root it is started with
``-u postgres`` and its directory belongs to that user. The Debian service on 6432 is
never touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.postgres import INSTALL_HINT, SYSTEM_USER, PostgresCluster, give_to_server_user
from lab.processes import MissingBinaries, free_port, stop_process_group, wait_until_ready

PGBOUNCER = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"

ADMIN_USER = "pooladmin"
ADMIN_PASSWORD = "pooladmin-test"
STATS_USER = "poolstats"
STATS_PASSWORD = "poolstats-test"


@dataclass(frozen=True)
class DatabaseEntry:
    """One ``[databases]`` line: ``name = host=… port=… dbname=… [options]``."""

    name: str
    #: The PostgreSQL database it points to (default: the cluster's).
    dbname: str | None = None
    pool_size: int | None = None
    reserve_pool: int | None = None
    max_db_connections: int | None = None
    pool_mode: str | None = None
    #: ``user=``: every client shares one pool logged in as this role.
    force_user: str | None = None

    def line(self, cluster: PostgresCluster) -> str:
        parts = [
            f"host={cluster.host}",
            f"port={cluster.port}",
            f"dbname={self.dbname or cluster.database}",
        ]
        options = {
            "pool_size": self.pool_size,
            "reserve_pool": self.reserve_pool,
            "max_db_connections": self.max_db_connections,
            "pool_mode": self.pool_mode,
            "user": self.force_user,
        }
        parts += [f"{key}={value}" for key, value in options.items() if value is not None]
        return f"{self.name} = {' '.join(parts)}"


@dataclass
class PgBouncer:
    """A running PgBouncer this process started."""

    base_dir: Path
    port: int
    cluster: PostgresCluster
    databases: tuple[DatabaseEntry, ...]
    settings: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    host: str = "127.0.0.1"
    admin_user: str = ADMIN_USER
    admin_password: str = ADMIN_PASSWORD
    stats_user: str = STATS_USER
    stats_password: str = STATS_PASSWORD
    users: dict[str, str] = field(default_factory=dict)

    @property
    def config_file(self) -> Path:
        return self.base_dir / "pgbouncer.ini"

    @property
    def auth_file(self) -> Path:
        return self.base_dir / "userlist.txt"

    @property
    def log_file(self) -> Path:
        return self.base_dir / "pgbouncer.log"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def conninfo(
        self, database: str, *, user: str | None = None, password: str | None = None
    ) -> str:
        """A libpq connection string for a client of ``database`` through the pooler."""
        role = user or self.cluster.role
        secret = password if password is not None else self.users.get(role, "")
        return f"host={self.host} port={self.port} dbname={database} user={role} password={secret}"

    def admin_conninfo(self, *, stats_only: bool = False) -> str:
        user, password = (
            (self.stats_user, self.stats_password)
            if stats_only
            else (self.admin_user, self.admin_password)
        )
        return f"host={self.host} port={self.port} dbname=pgbouncer user={user} password={password}"

    def target_section(
        self,
        *,
        user: str | None = None,
        password: str | None = None,
        postgres_user: str | None = None,
        postgres_password: str | None = None,
        **pgbouncer_options: Any,
    ) -> dict[str, Any]:
        """The agent's ``[target]`` + ``[target.pgbouncer]`` for this PgBouncer: the admin
        user by default, and the cluster's role (pg_monitor) on PostgreSQL;
        ``pgbouncer_options`` go into ``[target.pgbouncer]``."""
        cluster = self.cluster
        return {
            "engine": "pgbouncer",
            "host": self.host,
            "port": self.port,
            "user": user or self.admin_user,
            "password": password if password is not None else self.admin_password,
            "pgbouncer": {
                "postgres_host": cluster.host,
                "postgres_port": cluster.port,
                "postgres_user": postgres_user or cluster.role,
                "postgres_password": postgres_password or cluster.password,
                "postgres_database": cluster.database,
                **pgbouncer_options,
            },
        }

    def admin(self, statement: str) -> list[tuple[Any, ...]]:
        """Run one admin console command (simple query protocol) and return its rows."""
        import psycopg

        with psycopg.connect(self.admin_conninfo(), autocommit=True, connect_timeout=10) as conn:
            cursor = conn.execute(statement.encode())
            return list(cursor.fetchall()) if cursor.description else []

    def render(self) -> str:
        """The ini text for the current databases and settings."""
        lines = ["[databases]"]
        lines += [entry.line(self.cluster) for entry in self.databases]
        lines += ["", "[pgbouncer]"]
        lines += [f"{key} = {value}" for key, value in self.settings.items()]
        return "\n".join(lines) + "\n"

    def write_config(self) -> None:
        self.config_file.write_text(self.render())
        give_to_server_user(self.config_file)

    def reconfigure(
        self,
        *,
        databases: Sequence[DatabaseEntry] | None = None,
        settings: Mapping[str, str] | None = None,
        reload: bool = True,
    ) -> None:
        """Rewrite the ini with new ``databases`` and/or ``settings`` (merged) and RELOAD."""
        if databases is not None:
            self.databases = tuple(databases)
        if settings:
            self.settings.update(settings)
        self.write_config()
        if reload:
            self.admin("RELOAD")

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def _auth_line(user: str, password: str) -> str:
    return f'"{user}" "{password}"'


def start_pgbouncer(
    cluster: PostgresCluster,
    *,
    databases: Sequence[DatabaseEntry] = (DatabaseEntry("bench"),),
    pool_mode: str = "transaction",
    default_pool_size: int = 20,
    max_db_connections: int = 0,
    settings: Mapping[str, str] | None = None,
    prefix: str = "pooltune-pgbouncer-",
) -> PgBouncer:
    """Start a PgBouncer in front of ``cluster`` (see the module docstring). Clients log in
    as the cluster's role with its password; :data:`ADMIN_USER` may run every console
    command, :data:`STATS_USER` only the read-only ones."""
    if not Path(PGBOUNCER).exists():
        raise MissingBinaries(f"missing {PGBOUNCER}: {INSTALL_HINT}")
    base_dir = Path(tempfile.mkdtemp(prefix=prefix))
    base_dir.chmod(0o755)
    give_to_server_user(base_dir)
    port = free_port()
    bouncer = PgBouncer(
        base_dir=base_dir,
        port=port,
        cluster=cluster,
        databases=tuple(databases),
        settings={},
        users={cluster.role: cluster.password},
    )
    bouncer.settings = {
        "listen_addr": bouncer.host,
        "listen_port": str(port),
        "unix_socket_dir": "",
        "auth_type": "scram-sha-256",
        "auth_file": str(bouncer.auth_file),
        "admin_users": ADMIN_USER,
        "stats_users": STATS_USER,
        "pool_mode": pool_mode,
        "default_pool_size": str(default_pool_size),
        "max_db_connections": str(max_db_connections),
        "max_client_conn": "2000",
        "logfile": str(bouncer.log_file),
        "pidfile": str(base_dir / "pgbouncer.pid"),
        "ignore_startup_parameters": "extra_float_digits",
        "server_check_delay": "30",
        **(settings or {}),
    }
    bouncer.auth_file.write_text(
        "\n".join(
            [
                _auth_line(cluster.role, cluster.password),
                _auth_line(ADMIN_USER, ADMIN_PASSWORD),
                _auth_line(STATS_USER, STATS_PASSWORD),
            ]
        )
        + "\n"
    )
    give_to_server_user(bouncer.auth_file)
    bouncer.write_config()
    command = [PGBOUNCER]
    if os.geteuid() == 0:
        command += ["-u", SYSTEM_USER]
    command.append(str(bouncer.config_file))
    bouncer.process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_ready(bouncer)
    except BaseException:
        stop_pgbouncer(bouncer)
        raise
    return bouncer


def _wait_ready(bouncer: PgBouncer, timeout_s: float = 30.0) -> None:
    import psycopg

    assert bouncer.process is not None
    wait_until_ready(
        lambda: bouncer.admin("SHOW VERSION"),
        process=bouncer.process,
        name="pgbouncer",
        timeout_s=timeout_s,
        not_ready=(psycopg.OperationalError,),
        details=bouncer.log_tail,
    )


def stop_pgbouncer(bouncer: PgBouncer, *, remove: bool = True) -> None:
    """Stop the pooler (SIGTERM, then SIGKILL) and remove its directory."""
    if bouncer.process is not None:
        stop_process_group(bouncer.process)
    if remove:
        shutil.rmtree(bouncer.base_dir, ignore_errors=True)
