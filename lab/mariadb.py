"""Private MariaDB servers: a fresh data directory under /tmp, free ports, its own socket, an
``extra_port`` and a TCP account with every right. See docs/lab.md.

The system-wide MariaDB on 3306 is never touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lab.processes import free_ports, require_binaries, stop_process, wait_until_ready

MARIADBD = os.environ.get("POOLTUNE_TEST_MARIADBD", "/usr/sbin/mariadbd")
INSTALL_DB = shutil.which("mariadb-install-db") or "/usr/bin/mariadb-install-db"
INSTALL_HINT = (
    "the real-server harness needs MariaDB 10.11 and sysbench from Debian's packages: "
    "`apt-get install mariadb-server sysbench` (or run `make system`, which installs them)"
)

ACCOUNT_USER = "pooltune"
ACCOUNT_PASSWORD = "pooltune-test"
#: The database every server starts with (sysbench's default).
DEFAULT_DATABASE = "sbtest"

#: Options every server starts with, besides its own address, ports and paths; the
#: ``extra_args`` of :func:`start_mariadb` come after them, so a later option wins.
BASE_OPTIONS = (
    "--max-connections=600",
    "--innodb-buffer-pool-size=32M",
    "--innodb-log-file-size=16M",
    "--skip-log-bin",
    "--skip-name-resolve",
    "--performance-schema=OFF",
)

#: Server options that let the agent time synchronisation waits (its contention signal).
SYNC_TIMING_ARGS = (
    "--performance-schema=ON",
    "--performance-schema-instrument=wait/synch/%=ON",
)


def server_version() -> str:
    """The installed server's version as ``VERSION()`` reports it (``mariadbd --version``
    prints ``mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for ...``); empty when unknown."""
    try:
        result = subprocess.run(
            [MARIADBD, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return ""
    words = result.stdout.split()
    return words[words.index("Ver") + 1] if "Ver" in words[:-1] else ""


#: What VERSION() appends to the release while binary logging is on.
BINLOG_SUFFIX = "-log"


def release_of(version: str) -> str:
    """The release a running server's ``VERSION()`` names: ``-log`` (binary logging on, a
    setting, not another binary) stripped, so it compares with :func:`server_version`."""
    return version.removesuffix(BINLOG_SUFFIX)


@dataclass
class MariaDBServer:
    """A running server this process started, with what a client needs to reach it."""

    base_dir: Path
    port: int
    #: 0 for a server without the thread pool (it has no extra port).
    extra_port: int
    socket: Path
    process: subprocess.Popen[bytes]
    pool_of_threads: bool
    #: The server's command line, as started.
    command_line: tuple[str, ...] = ()
    host: str = "127.0.0.1"
    user: str = ACCOUNT_USER
    password: str = ACCOUNT_PASSWORD
    database: str = DEFAULT_DATABASE
    #: sysbench tables filled so far, as (database, tables, rows per table); they outlive
    #: one load, so the next one with the same shape skips ``prepare``.
    prepared_tables: set[tuple[str, int, int]] = field(default_factory=set)
    log_file: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_file = self.base_dir / "error.log"

    def sql(self, statement: str) -> list[tuple[object, ...]]:
        """Run one statement as the TCP account, through the extra port when there is one."""
        import pymysql

        connection = pymysql.connect(
            host=self.host,
            port=self.extra_port or self.port,
            user=self.user,
            password=self.password,
            autocommit=True,
            connect_timeout=5,
        )
        try:
            with connection.cursor() as cursor:
                cursor.execute(statement)
                return list(cursor.fetchall())
        finally:
            connection.close()

    def target_section(self, **overrides: object) -> dict[str, object]:
        """The agent's ``[target]`` configuration for this server (TCP account, main port;
        the agent finds the extra port itself), with ``overrides``."""
        return {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
        } | overrides

    def variable(self, name: str) -> int:
        ((value,),) = self.sql(f"SELECT @@global.{name}")
        return int(str(value))

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no error log)"


def _root_sql(socket_path: Path, statements: list[str]) -> None:
    """Run ``statements`` as root over the socket (socket authentication only)."""
    import pymysql

    connection = pymysql.connect(unix_socket=str(socket_path), user="root", autocommit=True)
    try:
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
    finally:
        connection.close()


def _install_data_dir(data_dir: Path, user_args: list[str]) -> None:
    install = subprocess.run(
        [
            INSTALL_DB,
            "--no-defaults",
            f"--datadir={data_dir}",
            "--auth-root-authentication-method=socket",
            "--skip-test-db",
            *user_args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if install.returncode != 0:
        raise RuntimeError(f"mariadb-install-db failed:\n{install.stdout}\n{install.stderr}")


def start_mariadb(
    *,
    pool_of_threads: bool = True,
    prefix: str = "pooltune-mariadb-",
    extra_args: tuple[str, ...] = (),
    ready_timeout_s: float = 60.0,
) -> MariaDBServer:
    """Install a data directory, start mariadbd on free ports and create the TCP account.

    ``extra_args`` come after :data:`BASE_OPTIONS` (later options win), e.g.
    ``("--log-bin=binlog", "--sync-binlog=1")`` for an IO-bound server. Raises
    :class:`lab.processes.MissingBinaries` when MariaDB is not installed.
    """
    require_binaries(MARIADBD, INSTALL_DB, hint=INSTALL_HINT)
    base_dir = Path(tempfile.mkdtemp(prefix=prefix))
    data_dir = base_dir / "data"
    user_args = ["--user=root"] if os.geteuid() == 0 else []
    try:
        _install_data_dir(data_dir, user_args)
    except BaseException:
        shutil.rmtree(base_dir, ignore_errors=True)
        raise
    port, extra_port = free_ports(2)
    socket_path = base_dir / "mariadb.sock"
    options = list(BASE_OPTIONS)
    if any(arg.startswith("--log-bin") for arg in extra_args):
        options.remove("--skip-log-bin")
    args = [
        MARIADBD,
        "--no-defaults",
        f"--datadir={data_dir}",
        f"--socket={socket_path}",
        f"--pid-file={base_dir / 'mariadb.pid'}",
        f"--log-error={base_dir / 'error.log'}",
        "--bind-address=127.0.0.1",
        f"--port={port}",
        *options,
        *user_args,
    ]
    if pool_of_threads:
        args += [
            "--thread-handling=pool-of-threads",
            f"--extra-port={extra_port}",
            "--extra-max-connections=20",
        ]
    else:
        extra_port = 0
    args += list(extra_args)
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = MariaDBServer(
        base_dir=base_dir,
        port=port,
        extra_port=extra_port,
        socket=socket_path,
        process=process,
        pool_of_threads=pool_of_threads,
        command_line=tuple(args),
    )
    try:
        import pymysql

        wait_until_ready(
            lambda: pymysql.connect(unix_socket=str(socket_path), user="root").close(),
            process=process,
            name="mariadbd",
            timeout_s=ready_timeout_s,
            not_ready=(pymysql.err.MySQLError,),
            details=server.log_tail,
        )
        _root_sql(
            socket_path,
            [
                f"CREATE USER '{ACCOUNT_USER}'@'127.0.0.1' IDENTIFIED BY '{ACCOUNT_PASSWORD}'",
                f"GRANT ALL PRIVILEGES ON *.* TO '{ACCOUNT_USER}'@'127.0.0.1' WITH GRANT OPTION",
                f"CREATE DATABASE {DEFAULT_DATABASE}",
            ],
        )
    except BaseException:
        stop_mariadb(server)
        raise
    return server


def restart_mariadb(server: MariaDBServer, *, ready_timeout_s: float = 60.0) -> None:
    """Stop ``server`` cleanly (SIGTERM) and start it again with the same command line: the
    same data directory, ports and socket, so accounts and tables stay. Values set with
    ``SET GLOBAL`` are lost, as on any restart: the server comes back with its startup
    values."""
    import pymysql

    stop_process(server.process, timeout_s=30.0)
    server.process = subprocess.Popen(
        list(server.command_line), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_until_ready(
        lambda: pymysql.connect(unix_socket=str(server.socket), user="root").close(),
        process=server.process,
        name="mariadbd (restarted)",
        timeout_s=ready_timeout_s,
        not_ready=(pymysql.err.MySQLError,),
        details=server.log_tail,
    )


def stop_mariadb(server: MariaDBServer) -> None:
    """Stop the server (SIGTERM, then SIGKILL) and remove its directory."""
    try:
        stop_process(server.process, timeout_s=30.0)
    finally:
        shutil.rmtree(server.base_dir, ignore_errors=True)


@contextlib.contextmanager
def running_mariadb(
    *,
    pool_of_threads: bool = True,
    prefix: str = "pooltune-mariadb-",
    extra_args: tuple[str, ...] = (),
) -> Iterator[MariaDBServer]:
    """:func:`start_mariadb`, stopped and removed on the way out whatever happened."""
    server = start_mariadb(pool_of_threads=pool_of_threads, prefix=prefix, extra_args=extra_args)
    try:
        yield server
    finally:
        stop_mariadb(server)
