"""pgbench loads: the built-in TPC-B-like and select-only scripts and custom scripts with
off-CPU waits (``pg_sleep``), hot-row updates (lock waits) and range scans. Every run starts
in its own process group and is killed with all its threads. See docs/pgbouncer.md.

pgbench ships with Debian's PostgreSQL server package (``/usr/lib/postgresql/<v>/bin``).
Runs through PgBouncer use the simple query protocol (``-M simple``): prepared statements do
not survive transaction pooling in PgBouncer 1.18.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lab.postgres import PostgresCluster, program
from lab.processes import stop_process_group

BUILTIN_SCRIPTS = frozenset({"tpcb-like", "simple-update", "select-only"})
#: Rows of pgbench_accounts per unit of scale.
ACCOUNTS_PER_SCALE = 100_000


@dataclass(frozen=True)
class Script:
    """A pgbench script: a built-in one (``-b``) or the text of a custom one (``-f``)."""

    name: str
    builtin: str | None = None
    text: str | None = None

    def __post_init__(self) -> None:
        if (self.builtin is None) == (self.text is None):
            raise ValueError("a script is either built in or has a text, not both or neither")
        if self.builtin is not None and self.builtin not in BUILTIN_SCRIPTS:
            raise ValueError(
                f"unknown built-in script {self.builtin!r}; known: {sorted(BUILTIN_SCRIPTS)}"
            )


TPCB_LIKE = Script("tpcb-like", builtin="tpcb-like")
SELECT_ONLY = Script("select-only", builtin="select-only")


def sleep_script(sleep_ms: float, *, select_rows: int = 1) -> Script:
    """A point select followed by ``pg_sleep``: a request that holds its server connection
    off-CPU for ``sleep_ms`` (an external call, a slow disk)."""
    return Script(
        f"sleep-{sleep_ms:g}ms",
        text=(
            f"\\set aid random(1, {ACCOUNTS_PER_SCALE} * :scale - {select_rows})\n"
            "BEGIN;\n"
            f"SELECT abalance FROM pgbench_accounts WHERE aid BETWEEN :aid AND :aid + "
            f"{select_rows - 1};\n"
            f"SELECT pg_sleep({sleep_ms / 1000.0:g});\n"
            "END;\n"
        ),
    )


def hot_row_script(rows: int) -> Script:
    """Updates of ``rows`` hot rows in one transaction: concurrency turns into row-lock
    waits (``wait_event_type = 'Lock'``)."""
    return Script(
        f"hot-row-{rows}",
        text=(
            f"\\set aid random(1, {rows})\n"
            "BEGIN;\n"
            "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;\n"
            "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"
            "END;\n"
        ),
    )


def scan_script(rows: int) -> Script:
    """A read-heavy range scan over ``rows`` accounts: long CPU-bound reads."""
    return Script(
        f"scan-{rows}",
        text=(
            f"\\set aid random(1, {ACCOUNTS_PER_SCALE} * :scale - {rows})\n"
            f"SELECT sum(abalance), count(*) FROM pgbench_accounts "
            f"WHERE aid BETWEEN :aid AND :aid + {rows};\n"
        ),
    )


@dataclass(frozen=True)
class Endpoint:
    """Where pgbench connects: the cluster itself or a PgBouncer in front of it."""

    host: str
    port: int
    database: str
    user: str
    password: str


def cluster_endpoint(cluster: PostgresCluster) -> Endpoint:
    return Endpoint(cluster.host, cluster.port, cluster.database, cluster.role, cluster.password)


@dataclass(frozen=True)
class PgbenchResult:
    """What pgbench printed at the end of a run."""

    transactions: int
    failed: int
    tps: float
    latency_ms: float | None


_PROCESSED = re.compile(r"number of transactions actually processed: (\d+)")
_FAILED = re.compile(r"number of failed transactions: (\d+)")
_TPS = re.compile(r"tps = ([0-9.]+) \((?:without|excluding)")
_LATENCY = re.compile(r"latency average = ([0-9.]+) ms")


def parse_result(output: str) -> PgbenchResult:
    """The summary of a finished run; raises ValueError when there is none."""
    processed = _PROCESSED.search(output)
    tps = _TPS.search(output)
    if processed is None or tps is None:
        raise ValueError(f"no pgbench summary in:\n{output[-2000:]}")
    failed = _FAILED.search(output)
    latency = _LATENCY.search(output)
    return PgbenchResult(
        transactions=int(processed.group(1)),
        failed=int(failed.group(1)) if failed else 0,
        tps=float(tps.group(1)),
        latency_ms=float(latency.group(1)) if latency else None,
    )


@dataclass
class PgbenchRun:
    """One pgbench process in its own process group."""

    process: subprocess.Popen[bytes]
    output_file: Path
    script: Script
    clients: int

    def running(self) -> bool:
        return self.process.poll() is None

    def output(self) -> str:
        try:
            return self.output_file.read_text(errors="replace")
        except OSError:
            return ""

    def wait(self, timeout_s: float) -> PgbenchResult:
        """Wait for the run to end by itself (``-T``) and return its summary."""
        self.process.wait(timeout=timeout_s)
        if self.process.returncode not in (0, 2):  # 2: some clients failed, summary printed
            raise RuntimeError(f"pgbench exited with {self.process.returncode}:\n{self.output()}")
        return parse_result(self.output())

    def stop(self) -> None:
        """SIGTERM to the process group, SIGKILL after 10 s; returns once it has exited."""
        stop_process_group(self.process)


@dataclass
class Pgbench:
    """pgbench against one cluster's database; every run it starts is stopped by
    :meth:`stop_all`."""

    cluster: PostgresCluster
    scale: int = 1
    #: Where scripts and outputs go: a temporary directory made by the first run.
    work_dir: Path | None = None
    _runs: list[PgbenchRun] = field(default_factory=list)
    #: Whether the tables exist at :attr:`scale` (``pgbench -i`` ran).
    initialised: bool = False

    def _environment(self, endpoint: Endpoint) -> dict[str, str]:
        return {**os.environ, "PGPASSWORD": endpoint.password, "PGCONNECT_TIMEOUT": "10"}

    def initialise(self, *, force: bool = False) -> None:
        """``pgbench -i`` at :attr:`scale`, straight on the cluster (once)."""
        if self.initialised and not force:
            return
        endpoint = cluster_endpoint(self.cluster)
        command = [
            str(program("pgbench")),
            "-i",
            "-q",
            "-s",
            str(self.scale),
            "-h",
            endpoint.host,
            "-p",
            str(endpoint.port),
            "-U",
            endpoint.user,
            endpoint.database,
        ]
        env = self._environment(endpoint)
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
        if result.returncode != 0:
            raise RuntimeError(f"pgbench -i failed:\n{result.stdout}{result.stderr}")
        self.initialised = True

    def start(
        self,
        endpoint: Endpoint,
        script: Script,
        *,
        clients: int,
        time_s: int,
        jobs: int = 2,
        extra_args: Sequence[str] = (),
    ) -> PgbenchRun:
        """Run ``script`` with ``clients`` connections for ``time_s`` seconds in the
        background (``-n``: no vacuum; ``-M simple``)."""
        self.initialise()
        if self.work_dir is None:
            self.work_dir = Path(tempfile.mkdtemp(prefix="pooltune-pgbench-"))
        work_dir = self.work_dir
        command = [
            str(program("pgbench")),
            "-n",
            "-M",
            "simple",
            "-c",
            str(clients),
            "-j",
            str(max(1, min(jobs, clients))),
            "-T",
            str(time_s),
            "-h",
            endpoint.host,
            "-p",
            str(endpoint.port),
            "-U",
            endpoint.user,
        ]
        if script.builtin is not None:
            command += ["-b", script.builtin]
        else:
            assert script.text is not None
            path = work_dir / f"{script.name}.sql"
            path.write_text(script.text)
            command += ["-f", str(path)]
        command += [*extra_args, endpoint.database]
        index = len(self._runs)
        output_file = work_dir / f"run-{index}-{script.name}.out"
        with output_file.open("wb") as output:
            process = subprocess.Popen(
                command,
                stdout=output,
                stderr=subprocess.STDOUT,
                env=self._environment(endpoint),
                start_new_session=True,
            )
        run = PgbenchRun(process=process, output_file=output_file, script=script, clients=clients)
        self._runs.append(run)
        return run

    def stop_all(self) -> None:
        for run in self._runs:
            run.stop()
        self._runs.clear()

    def close(self) -> None:
        self.stop_all()
        if self.work_dir is not None:
            shutil.rmtree(self.work_dir, ignore_errors=True)
