"""sysbench load against a lab MariaDB: fill the tables once, run a workload in the
background, stop it with every process it forked. See docs/lab.md."""

from __future__ import annotations

import contextlib
import logging
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from lab.mariadb import INSTALL_HINT, MariaDBServer
from lab.processes import require_binaries, stop_process_group

logger = logging.getLogger(__name__)

SYSBENCH = shutil.which("sysbench") or "/usr/bin/sysbench"
#: The project's own sysbench scripts (the real datasets' and the live benchmark's loads).
LUA_DIR = Path(__file__).resolve().parents[1] / "scripts" / "sysbench"

DEFAULT_TABLES = 2
DEFAULT_TABLE_SIZE = 5000
#: Errors a load on a few hot rows meets and retries: deadlock, record changed, lock wait
#: timeout.
LOCK_ERRORS = ("1213", "1020", "1205")


def require_sysbench() -> None:
    """Raise :class:`lab.processes.MissingBinaries` when sysbench is not installed."""
    require_binaries(SYSBENCH, hint=INSTALL_HINT)


def sysbench_version() -> str:
    """``sysbench --version``'s line, e.g. ``sysbench 1.0.20``."""
    result = subprocess.run([SYSBENCH, "--version"], capture_output=True, text=True, check=False)
    return result.stdout.strip()


def tables_test(test: str) -> str:
    """The built-in script that creates the tables ``test`` uses: Lua scripts of our own
    (:data:`LUA_DIR`) use the tables of the standard OLTP scripts."""
    return test if Path(test).name.startswith("oltp_") else "oltp_read_only"


class SysbenchLoad:
    """sysbench workloads on one server, database and table shape; every background run it
    started is stopped by :meth:`stop_all`."""

    def __init__(
        self,
        server: MariaDBServer,
        *,
        database: str | None = None,
        tables: int = DEFAULT_TABLES,
        table_size: int = DEFAULT_TABLE_SIZE,
    ) -> None:
        self.server = server
        self.database = database or server.database
        self.tables = tables
        self.table_size = table_size
        self._running: list[subprocess.Popen[bytes]] = []

    def args(self, test: str, *extra: str) -> list[str]:
        """sysbench's command line for ``test`` on this server and table shape."""
        return [
            SYSBENCH,
            test,
            f"--mysql-host={self.server.host}",
            f"--mysql-port={self.server.port}",
            f"--mysql-user={self.server.user}",
            f"--mysql-password={self.server.password}",
            f"--mysql-db={self.database}",
            f"--tables={self.tables}",
            f"--table-size={self.table_size}",
            *extra,
        ]

    def prepare(self, test: str = "oltp_read_only", *, timeout_s: float = 900.0) -> None:
        """Create the database and fill the tables ``test`` reads (once per server and shape)."""
        require_sysbench()
        shape = (self.database, self.tables, self.table_size)
        if shape in self.server.prepared_tables:
            return
        self.server.sql(f"CREATE DATABASE IF NOT EXISTS {self.database}")
        started = time.monotonic()
        result = subprocess.run(
            self.args(tables_test(test), "--threads=2", "prepare"),
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if result.returncode != 0:
            raise RuntimeError(f"sysbench prepare failed:\n{result.stdout}\n{result.stderr}")
        logger.info(
            "prepared %s: %d x %d rows in %.0fs",
            self.database,
            self.tables,
            self.table_size,
            time.monotonic() - started,
        )
        self.server.prepared_tables.add(shape)

    def start(
        self,
        test: str = "oltp_read_only",
        *,
        threads: int = 4,
        time_s: int = 300,
        extra_args: Sequence[str] = (),
        ignore_errors: Sequence[str] = (),
        log_path: Path | None = None,
    ) -> subprocess.Popen[bytes]:
        """Run ``test`` in the background for at most ``time_s`` seconds, in its own process
        group; its output goes to ``log_path`` (or nowhere)."""
        self.prepare(test)
        args = self.args(
            test,
            *extra_args,
            f"--threads={threads}",
            f"--time={time_s}",
            "--report-interval=0",
            *([f"--mysql-ignore-errors={','.join(ignore_errors)}"] if ignore_errors else []),
            "run",
        )
        with contextlib.ExitStack() as stack:
            output = stack.enter_context(log_path.open("wb")) if log_path else subprocess.DEVNULL
            process = subprocess.Popen(
                args, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
            )
        self._running.append(process)
        return process

    @contextlib.contextmanager
    def running(
        self,
        test: str = "oltp_read_only",
        *,
        threads: int = 4,
        time_s: int = 300,
        extra_args: Sequence[str] = (),
        ignore_errors: Sequence[str] = (),
        log_path: Path | None = None,
    ) -> Iterator[subprocess.Popen[bytes]]:
        """:meth:`start`, stopped on the way out whatever happened."""
        process = self.start(
            test,
            threads=threads,
            time_s=time_s,
            extra_args=extra_args,
            ignore_errors=ignore_errors,
            log_path=log_path,
        )
        try:
            yield process
        finally:
            self.stop(process)

    def stop(self, process: subprocess.Popen[bytes]) -> None:
        """Stop one run and everything it forked."""
        stop_process_group(process, timeout_s=15.0)
        if process in self._running:
            self._running.remove(process)

    def stop_all(self) -> None:
        for process in list(self._running):
            self.stop(process)


def printable_command(process: subprocess.Popen[bytes], *, relative_to: Path | None = None) -> str:
    """``process``'s command line for a report: the password masked, paths under
    ``relative_to`` relative."""
    args = process.args if isinstance(process.args, list) else [process.args]
    text = shlex.join(
        "--mysql-password=***" if str(arg).startswith("--mysql-password=") else str(arg)
        for arg in args
    )
    return text.replace(f"{relative_to}/", "") if relative_to is not None else text
