"""Private PostgreSQL clusters: ``initdb`` into a fresh directory under /tmp, a free port, its
own Unix socket directory, a login role for the tests and the agent. See docs/pgbouncer.md.

PostgreSQL refuses to run as root: when this process is root, every server command runs as
the ``postgres`` system user (``runuser``) and the cluster's directory belongs to that user.
The system-wide cluster on 5432 is never touched.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.processes import MissingBinaries, free_port

INSTALL_HINT = (
    "the PostgreSQL harness needs PostgreSQL 15 and PgBouncer from Debian's packages: "
    "`apt-get install postgresql pgbouncer` (or run scripts/ensure-system.sh)"
)

#: The role the tests, pgbench and the agent log in as (password over TCP).
ROLE = "pooltune"
ROLE_PASSWORD = "pooltune-pg-test"
#: The database created for the load.
DATABASE = "bench"
#: The OS user that owns the cluster when this process runs as root.
SYSTEM_USER = "postgres"

#: Settings every cluster starts with; the ``settings`` of :func:`start_postgres` win.
BASE_SETTINGS: Mapping[str, str] = {
    "max_connections": "200",
    "superuser_reserved_connections": "3",
    "shared_buffers": "64MB",
    "shared_preload_libraries": "'pg_stat_statements'",
    "track_io_timing": "on",
    "log_min_messages": "warning",
    "log_checkpoints": "off",
}


def bin_dir() -> Path:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with a server (or
    ``POOLTUNE_PG_BINDIR``)."""
    override = os.environ.get("POOLTUNE_PG_BINDIR")
    if override:
        return Path(override)
    candidates = [Path(path).parent for path in glob.glob("/usr/lib/postgresql/*/bin/postgres")]
    if not candidates:
        raise MissingBinaries(f"no /usr/lib/postgresql/*/bin/postgres: {INSTALL_HINT}")
    return max(candidates, key=lambda path: int(path.parent.name.split(".")[0]))


def program(name: str) -> Path:
    """A PostgreSQL program (``initdb``, ``pg_ctl``, ``pgbench``, …) of :func:`bin_dir`."""
    path = bin_dir() / name
    if not path.exists():
        raise MissingBinaries(f"missing {path}: {INSTALL_HINT}")
    return path


def as_server_user(command: Sequence[str]) -> list[str]:
    """``command`` run as :data:`SYSTEM_USER` when this process is root, else as is."""
    if os.geteuid() == 0:
        return ["runuser", "-u", SYSTEM_USER, "--", *command]
    return list(command)


def give_to_server_user(path: Path) -> None:
    """Hand ``path`` to :data:`SYSTEM_USER` when running as root (servers must own their
    files and cannot run as root)."""
    if os.geteuid() == 0:
        entry = pwd.getpwnam(SYSTEM_USER)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def run_checked(command: Sequence[str], *, what: str, timeout_s: float = 120.0) -> str:
    """Run ``command``; raise RuntimeError with its output when it fails."""
    result = subprocess.run(
        list(command), capture_output=True, text=True, timeout=timeout_s, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return result.stdout


@dataclass
class PostgresCluster:
    """A running cluster this process started, with what a client needs to reach it."""

    base_dir: Path
    port: int
    host: str = "127.0.0.1"
    role: str = ROLE
    password: str = ROLE_PASSWORD
    database: str = DATABASE
    settings: Mapping[str, str] = field(default_factory=dict)

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    @property
    def socket_dir(self) -> Path:
        return self.base_dir

    @property
    def log_file(self) -> Path:
        return self.base_dir / "postgres.log"

    def conninfo(self, *, database: str | None = None, superuser: bool = False) -> str:
        """A libpq connection string: the test role over TCP, or the superuser over the
        socket (trusted)."""
        dbname = database or self.database
        if superuser:
            return f"host={self.socket_dir} port={self.port} user=postgres dbname={dbname}"
        return (
            f"host={self.host} port={self.port} user={self.role} "
            f"password={self.password} dbname={dbname}"
        )

    def sql(
        self, statement: str, *, database: str | None = None, superuser: bool = True
    ) -> list[tuple[Any, ...]]:
        """Run one statement (autocommit) and return its rows (empty for commands)."""
        import psycopg

        with psycopg.connect(
            self.conninfo(database=database or "postgres", superuser=superuser),
            autocommit=True,
            connect_timeout=10,
        ) as connection:
            cursor = connection.execute(statement.encode())
            return list(cursor.fetchall()) if cursor.description else []

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data_dir / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def _write_settings(data_dir: Path, settings: Mapping[str, str]) -> None:
    with (data_dir / "postgresql.conf").open("a") as conf:
        conf.write("\n# pooltune lab\n")
        for name, value in settings.items():
            conf.write(f"{name} = {value}\n")


def start_postgres(
    *,
    settings: Mapping[str, str] | None = None,
    prefix: str = "pooltune-pg-",
    database: str = DATABASE,
) -> PostgresCluster:
    """initdb, start and prepare a cluster (see the module docstring); the role
    :data:`ROLE` may log in over TCP with a SCRAM password, has ``pg_monitor`` and owns
    ``database``."""
    initdb, pg_ctl = program("initdb"), program("pg_ctl")
    base_dir = Path(tempfile.mkdtemp(prefix=prefix))
    base_dir.chmod(0o755)
    give_to_server_user(base_dir)
    cluster = PostgresCluster(base_dir=base_dir, port=free_port(), database=database)
    merged = {
        **BASE_SETTINGS,
        "port": str(cluster.port),
        "listen_addresses": f"'{cluster.host}'",
        "unix_socket_directories": f"'{cluster.socket_dir}'",
        **(settings or {}),
    }
    cluster.settings = merged
    try:
        run_checked(
            as_server_user(
                [
                    str(initdb),
                    "-D",
                    str(cluster.data_dir),
                    "-U",
                    "postgres",
                    "--auth-local=trust",
                    "--auth-host=scram-sha-256",
                    "--encoding=UTF8",
                    "--locale=C",
                    "--no-sync",
                ]
            ),
            what="initdb",
        )
        _write_settings(cluster.data_dir, merged)
        run_checked(
            as_server_user(
                [
                    str(pg_ctl),
                    "-D",
                    str(cluster.data_dir),
                    "-l",
                    str(cluster.log_file),
                    "-w",
                    "-t",
                    "60",
                    "start",
                ]
            ),
            what=f"starting PostgreSQL on port {cluster.port}",
        )
        cluster.sql(
            f"CREATE ROLE {cluster.role} LOGIN PASSWORD '{cluster.password}' IN ROLE pg_monitor"
        )
        cluster.sql(f"CREATE DATABASE {database} OWNER {cluster.role}")
        cluster.sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements", database=database)
    except BaseException as exc:
        log = cluster.log_tail()
        stop_postgres(cluster)
        if isinstance(exc, RuntimeError):
            raise RuntimeError(f"{exc}\nserver log:\n{log}") from exc
        raise
    return cluster


def stop_postgres(cluster: PostgresCluster, *, remove: bool = True) -> None:
    """Stop the cluster (fast shutdown, then SIGKILL to the postmaster if it hangs) and
    remove its directory."""
    if cluster.data_dir.exists() and cluster.postmaster_pid() is not None:
        stopped = subprocess.run(
            as_server_user(
                [
                    str(program("pg_ctl")),
                    "-D",
                    str(cluster.data_dir),
                    "-m",
                    "fast",
                    "-w",
                    "-t",
                    "30",
                    "stop",
                ]
            ),
            capture_output=True,
            timeout=60,
            check=False,
        )
        pid = cluster.postmaster_pid()
        if stopped.returncode != 0 and pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)
    if remove:
        shutil.rmtree(cluster.base_dir, ignore_errors=True)
