"""Regenerate ``datasets/mariadb-<cores>core-v1/``: real pool-size sweeps under sysbench.

End to end, on this host: start private MariaDB servers (pool-of-threads, own port,
datadir under /tmp, an ``extra_port`` for the measuring connection — the start/stop code
is the test suite's, ``tests/fixtures/mariadb.py``), prepare the sysbench tables, and for
each case run sysbench in the background while :mod:`agents.sweep` sweeps
``thread_pool_size`` over a grid in interleaved repeats (plus ``thread_pool_oversubscribe``
and ``thread_pool_stall_limit`` for a few cases). Then write the dataset in
``trainer/datasets.py``'s format with a README holding the provenance and the results.

Usage (from the repository root; the full run takes about 50 minutes)::

    .venv/bin/python -m scripts.make_mariadb_dataset
    .venv/bin/python -m scripts.make_mariadb_dataset --quick          # smoke run, ~2 min
    .venv/bin/python -m scripts.make_mariadb_dataset --cases hot_rows --out /tmp/hot

The machine may be shared: every sample logs the CPU used by other processes (host busy
time from /proc/stat minus the server's and sysbench's own), stored per curve point.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from agents import knobs
from agents.config import parse_config
from agents.profile import ThroughputMetric
from agents.state import OriginalTupleFile
from agents.sweep import (
    Progress,
    Sweeper,
    SweepPlan,
    SweepResult,
    format_table,
    within_noise,
)
from agents.targets.mariadb import MariaDBTarget
from tests.fixtures.mariadb import (
    SYNC_TIMING_ARGS,
    SYSBENCH,
    MariaDBServer,
    start_mariadb,
    stop_mariadb,
)
from trainer.datasets import CURVE_COLUMNS, write_dataset

logger = logging.getLogger("make_mariadb_dataset")

REPO = Path(__file__).resolve().parents[1]
LUA_DIR = REPO / "scripts" / "sysbench"
SIZE = "thread_pool_size"
OVERSUBSCRIBE = "thread_pool_oversubscribe"
STALL = "thread_pool_stall_limit"
TUNED = [SIZE, OVERSUBSCRIBE, STALL]

SIZE_GRID = (1, 2, 3, 4, 6, 8, 16, 32, 64)
OVERSUBSCRIBE_GRID = (1, 3, 10, 30)
STALL_GRID = (10, 100, 500, 2000)

#: Server options on top of the fixture's (``--innodb-buffer-pool-size=32M``,
#: ``--max-connections=600``, ``--skip-log-bin``, ...). Both servers time their
#: synchronisation waits (performance_schema with ``wait/synch/%``, the agent's recommended
#: setup, agents/packaging/README.md), so the profiles carry ``sync_ms_per_request``.
SERVER_OPTIONS: dict[str, tuple[str, ...]] = {
    # CPU-bound: the data fits the buffer pool, commits do not wait for the disk.
    "main": (
        *SYNC_TIMING_ARGS,
        "--innodb-buffer-pool-size=128M",
        "--innodb-flush-log-at-trx-commit=2",
    ),
    # IO-bound: every commit fsyncs the redo log and the binlog; the data is larger
    # than the buffer pool.
    "io": (
        *SYNC_TIMING_ARGS,
        "--innodb-flush-log-at-trx-commit=1",
        "--log-bin=binlog",
        "--sync-binlog=1",
        "--innodb-buffer-pool-size=8M",
    ),
}


@dataclass(frozen=True)
class Workload:
    """A sysbench workload on one of the servers; ``name`` is the dataset's group."""

    name: str
    kind: str
    server: str
    test: str
    database: str = "sbtest"
    tables: int = 4
    table_size: int = 10_000
    metric: ThroughputMetric = "transactions"
    pinned: bool = False
    group: str = ""
    extra_args: tuple[str, ...] = ()

    @property
    def group_name(self) -> str:
        return self.group or self.name


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("oltp_point_select", "cpu", "main", "oltp_point_select", metric="queries"),
        Workload("oltp_read_only", "cpu", "main", "oltp_read_only"),
        Workload("oltp_read_write", "cpu", "main", "oltp_read_write"),
        Workload("oltp_write_only", "cpu", "main", "oltp_write_only"),
        Workload("io_bound_read_write", "io", "io", "oltp_read_write", table_size=25_000),
        Workload(
            "hot_rows", "lock", "main", "oltp_read_write", database="hot", tables=1, table_size=10
        ),
        Workload(
            "cpu_wait_mix",
            "mixed",
            "main",
            str(LUA_DIR / "cpu_wait_mix.lua"),
            metric="queries",
            extra_args=("--point-selects=4", "--cpu-rounds=2500", "--sleep-ms=10"),
        ),
        # The same sysbench workload as oltp_read_only (so the same group), on one core.
        Workload(
            "pinned_read_only", "cpu", "main", "oltp_read_only", pinned=True, group="oltp_read_only"
        ),
    )
}


@dataclass(frozen=True)
class Case:
    workload: Workload
    clients: int
    secondary: bool = False

    @property
    def workload_id(self) -> str:
        return f"{self.workload.name}-c{self.clients}"


def full_cases() -> list[Case]:
    plan = [
        ("oltp_point_select", (4, 16, 64)),
        ("oltp_read_only", (4, 16, 64, 256)),
        ("oltp_read_write", (16, 64)),
        ("oltp_write_only", (16, 64)),
        ("io_bound_read_write", (16, 64)),
        ("hot_rows", (16, 64)),
        ("cpu_wait_mix", (16, 64)),
        ("pinned_read_only", (16, 64)),
    ]
    secondary = {("cpu_wait_mix", 64), ("io_bound_read_write", 64)}
    return [
        Case(WORKLOADS[name], clients, secondary=(name, clients) in secondary)
        for name, counts in plan
        for clients in counts
    ]


@dataclass(frozen=True)
class Timing:
    dwell_s: float
    sample_period_s: float
    discard_samples: int
    repeats: int
    secondary_repeats: int
    baseline_s: float
    warmup_s: float
    size_grid: tuple[int, ...]
    oversubscribe_grid: tuple[int, ...]
    stall_grid: tuple[int, ...]

    def case_seconds(self, case: Case) -> float:
        per_visit = self.dwell_s + 0.3
        total = self.warmup_s + self.baseline_s + per_visit * len(self.size_grid) * self.repeats
        if case.secondary:
            total += (
                per_visit
                * self.secondary_repeats
                * (len(self.oversubscribe_grid) + len(self.stall_grid))
            )
        return total + 3.0


FULL_TIMING = Timing(
    dwell_s=5.0,
    sample_period_s=1.0,
    discard_samples=2,
    repeats=3,
    secondary_repeats=2,
    baseline_s=6.0,
    warmup_s=3.0,
    size_grid=SIZE_GRID,
    oversubscribe_grid=OVERSUBSCRIBE_GRID,
    stall_grid=STALL_GRID,
)
QUICK_TIMING = Timing(
    dwell_s=3.0,
    sample_period_s=1.0,
    discard_samples=1,
    repeats=2,
    secondary_repeats=1,
    baseline_s=3.0,
    warmup_s=2.0,
    size_grid=(1, 2, 4, 16),
    oversubscribe_grid=(1, 3),
    stall_grid=(100, 500),
)


# -- servers and load -------------------------------------------------------------------


@dataclass
class Server:
    name: str
    server: MariaDBServer
    target: MariaDBTarget
    state: OriginalTupleFile
    version: str
    command_line: list[str]
    prepared: set[tuple[str, int, int]] = field(default_factory=set)

    def sysbench_args(self, workload: Workload, *extra: str) -> list[str]:
        return [
            SYSBENCH,
            workload.test,
            f"--mysql-host={self.server.host}",
            f"--mysql-port={self.server.port}",
            f"--mysql-user={self.server.user}",
            f"--mysql-password={self.server.password}",
            f"--mysql-db={workload.database}",
            f"--tables={workload.tables}",
            f"--table-size={workload.table_size}",
            *extra,
        ]

    def prepare(self, workload: Workload) -> None:
        key = (workload.database, workload.tables, workload.table_size)
        if key in self.prepared:
            return
        self.server.sql(f"CREATE DATABASE IF NOT EXISTS {workload.database}")
        # Lua scripts use the tables of the standard OLTP scripts.
        test = workload.test if workload.test.startswith("oltp_") else "oltp_read_only"
        args = self.sysbench_args(replace(workload, test=test), "--threads=2", "prepare")
        started = time.monotonic()
        result = subprocess.run(args, capture_output=True, text=True, timeout=900)
        if result.returncode != 0:
            raise RuntimeError(f"sysbench prepare failed:\n{result.stdout}\n{result.stderr}")
        logger.info(
            "[%s] prepared %s: %d x %d rows in %.0fs",
            self.name,
            workload.database,
            workload.tables,
            workload.table_size,
            time.monotonic() - started,
        )
        self.prepared.add(key)


def start_server(name: str, state_root: Path) -> Server:
    logger.info("starting MariaDB %r with %s", name, " ".join(SERVER_OPTIONS[name]))
    server = start_mariadb(prefix=f"pooltune-dataset-{name}-", extra_args=SERVER_OPTIONS[name])
    try:
        command_line = Path(f"/proc/{server.process.pid}/cmdline").read_bytes().decode().split("\0")
        settings = parse_config(
            {
                "target": {
                    "host": server.host,
                    "port": server.port,
                    "user": server.user,
                    "extra_port": server.extra_port,
                    "enable_latency": True,
                }
            },
            env={"POOLTUNE_DB_PASSWORD": server.password},
        ).target
        target = MariaDBTarget(settings, tuned_knobs=TUNED)
        target.connect()
        info = target.check()
        if not info.via_extra_port:
            raise RuntimeError("the measuring connection is not on the extra port")
        if info.server_pid is None:
            raise RuntimeError("the server's CPU time is not visible from here")
    except BaseException:
        stop_mariadb(server)
        raise
    return Server(
        name=name,
        server=server,
        target=target,
        state=OriginalTupleFile(state_root / name / "original-tuple.json"),
        version=info.version,
        command_line=[part for part in command_line if part],
    )


@contextlib.contextmanager
def sysbench_load(
    server: Server, case: Case, *, seconds: float, log_dir: Path
) -> Iterator[subprocess.Popen[bytes]]:
    args = server.sysbench_args(
        case.workload,
        *case.workload.extra_args,
        f"--threads={case.clients}",
        f"--time={math.ceil(seconds)}",
        "--report-interval=0",
        "--mysql-ignore-errors=1213,1020,1205",
        "run",
    )
    log_path = log_dir / f"{case.workload_id}.sysbench.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


@contextlib.contextmanager
def pinned(pid: int, enabled: bool) -> Iterator[None]:
    """Pin every thread of ``pid`` to CPU 0 (new threads inherit it), then unpin."""
    if not enabled:
        yield
        return
    all_cpus = ",".join(str(c) for c in sorted(os.sched_getaffinity(pid)))
    subprocess.run(["taskset", "-a", "-p", "-c", "0", str(pid)], check=True, capture_output=True)
    logger.info("server %d pinned to CPU 0", pid)
    try:
        yield
    finally:
        subprocess.run(
            ["taskset", "-a", "-p", "-c", all_cpus, str(pid)], check=True, capture_output=True
        )
        logger.info("server %d unpinned (CPUs %s)", pid, all_cpus)


def masked(args: Sequence[str]) -> str:
    return shlex.join(
        "--mysql-password=***" if a.startswith("--mysql-password=") else a for a in args
    ).replace(str(REPO) + "/", "")


# -- measuring --------------------------------------------------------------------------


@dataclass
class CaseResult:
    case: Case
    size: SweepResult
    secondary: dict[str, SweepResult]
    sysbench_command: str
    sysbench_ok: bool


def _progress(label: str) -> Any:
    def report(progress: Progress) -> None:
        if progress.visit % 5 == 0 or progress.visit == progress.visits:
            logger.info(
                "  %s visit %d/%d (repeat %d, value %d): %.0f/s, %.0fs left",
                label,
                progress.visit,
                progress.visits,
                progress.repeat,
                progress.value,
                progress.visit_mean,
                progress.remaining_s,
            )

    return report


def measure_case(
    server: Server, case: Case, timing: Timing, *, stop: threading.Event, log_dir: Path
) -> CaseResult:
    workload = case.workload
    server.prepare(workload)
    seconds = timing.case_seconds(case) + 60
    with (
        pinned(server.server.process.pid, workload.pinned),
        sysbench_load(server, case, seconds=seconds, log_dir=log_dir) as load,
    ):
        command = masked(load.args if isinstance(load.args, list) else [str(load.args)])
        if stop.wait(timing.warmup_s):
            raise KeyboardInterrupt
        if load.poll() is not None:
            raise RuntimeError(
                f"sysbench exited early ({load.returncode}); see "
                f"{log_dir / (case.workload_id + '.sysbench.log')}"
            )

        def sweep(knob: str, grid: tuple[int, ...], repeats: int, baseline: float) -> SweepResult:
            plan = SweepPlan(
                knob=knob,
                values=grid,
                dwell_s=timing.dwell_s,
                repeats=repeats,
                sample_period_s=timing.sample_period_s,
                discard_samples=timing.discard_samples,
                metric=workload.metric,
                baseline_s=baseline,
                load_pids=(load.pid,),
                seed=hash(case.workload_id) & 0xFFFF,
            )
            sweeper = Sweeper(
                target=server.target,
                plan=plan,
                state=server.state,
                stop=stop,
                on_progress=_progress(f"{case.workload_id} {knob}"),
            )
            return sweeper.run()

        size = sweep(SIZE, timing.size_grid, timing.repeats, timing.baseline_s)
        secondary: dict[str, SweepResult] = {}
        if case.secondary:
            secondary[OVERSUBSCRIBE] = sweep(
                OVERSUBSCRIBE, timing.oversubscribe_grid, timing.secondary_repeats, 0.0
            )
            secondary[STALL] = sweep(STALL, timing.stall_grid, timing.secondary_repeats, 0.0)
        sysbench_ok = load.poll() is None
        if not sysbench_ok:
            logger.warning("%s: sysbench ended before the sweep did", case.workload_id)
    return CaseResult(
        case=case,
        size=size,
        secondary=secondary,
        sysbench_command=command,
        sysbench_ok=sysbench_ok,
    )


# -- dataset ----------------------------------------------------------------------------


def _json_list(values: Sequence[float]) -> str:
    return json.dumps([round(v, 3) for v in values])


def curve_rows(workload_id: str, result: SweepResult) -> list[dict[str, Any]]:
    rows = []
    for point in result.points:
        rows.append(
            {
                "workload_id": workload_id,
                "knob": result.knob,
                "value": point.value,
                "throughput": point.mean,
                "throughput_std": point.std,
                "samples": point.count,
                "latency_ms": point.latency_ms if point.latency_ms is not None else math.nan,
                "throughput_cv": point.cv,
                "throughput_samples": _json_list(point.samples),
                "visit_means": _json_list(point.visit_means),
                "server_cpu_cores": _nan(point.server_cpu),
                "load_cpu_cores": _nan(point.load_cpu),
                "other_cpu_cores": _nan(point.other_cpu),
            }
        )
    return rows


def _differs(result: SweepResult, value: int) -> bool:
    best = result.best_value
    try:
        point = result.point(value)
    except KeyError:
        return False
    return best is not None and not within_noise(point, result.point(best))


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def secondary_best(result: SweepResult, default: int) -> int:
    """The default unless another value beats it by more than the noise."""
    best = result.best_value
    assert best is not None
    try:
        default_point = result.point(default)
    except KeyError:
        return best
    return default if within_noise(default_point, result.point(best)) else best


def workload_row(result: CaseResult, host: dict[str, Any]) -> dict[str, Any]:
    case = result.case
    size = result.size
    cpu_count = 1 if case.workload.pinned else int(host["cpu_count"])
    default_size = knobs.knob("mariadb", SIZE).default_for(cpu_count)
    profile = size.baseline_profile or size.profile
    assert profile is not None, f"{case.workload_id}: no profile"
    row: dict[str, Any] = {
        "workload_id": case.workload_id,
        "group": case.workload.group_name,
        "kind": case.workload.kind,
        "engine": "mariadb",
        "engine_version": host["engine_version"],
        "cpu_count": cpu_count,
        "memory_bytes": host["memory_bytes"],
    }
    for name, value in profile.model_dump().items():
        row[name] = json.dumps(value) if name == "extras" else value
    best_size = size.best_within_noise
    peak = size.best_mean
    try:
        size2 = size.point(2).mean
    except KeyError:
        size2 = math.nan
    try:
        default_tp = size.point(default_size).mean
    except KeyError:
        default_tp = math.nan
    row |= {
        f"best_{SIZE}": best_size,
        f"best_{OVERSUBSCRIBE}": (
            secondary_best(result.secondary[OVERSUBSCRIBE], 3)
            if OVERSUBSCRIBE in result.secondary
            else None
        ),
        f"best_{STALL}": (
            secondary_best(result.secondary[STALL], 500) if STALL in result.secondary else None
        ),
        "knee_size": size.knee,
        "peak_throughput": peak,
        "default_throughput": default_tp,
        # Analysis columns (not features).
        "workload": case.workload.name,
        "sysbench_test": Path(case.workload.test).name,
        "clients": case.clients,
        "pinned_to_one_core": case.workload.pinned,
        "throughput_metric": case.workload.metric,
        "best_size_raw": size.best_value,
        "throughput_size2": size2,
        "gain_over_size2": peak / size2 - 1.0 if size2 > 0 else math.nan,
        "noise_cv": size.noise,
        "differs_beyond_noise": _differs(size, 2),
        "other_cpu_cores": _nan(size.other_cpu),
        "sysbench_ok": result.sysbench_ok,
        "sysbench_command": result.sysbench_command,
        "measured_at": size.started_at.isoformat(timespec="seconds"),
    }
    return row


def build_tables(
    results: Sequence[CaseResult], host: dict[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = [workload_row(r, host) for r in results]
    points: list[dict[str, Any]] = []
    for r in results:
        points += curve_rows(r.case.workload_id, r.size)
        for sweep in r.secondary.values():
            points += curve_rows(r.case.workload_id, sweep)
    workloads = pd.DataFrame.from_records(rows)
    for name in (f"best_{OVERSUBSCRIBE}", f"best_{STALL}", f"best_{SIZE}", "knee_size"):
        workloads[name] = workloads[name].astype("Int64")
    curves = pd.DataFrame.from_records(points)
    curves = curves.astype({"value": "int32", "samples": "int16"})
    missing = [c for c in CURVE_COLUMNS if c not in curves.columns]
    assert not missing, missing
    return workloads, curves


def host_facts() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    memory = 0
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
    sysbench_version = subprocess.run(
        [SYSBENCH, "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "cpu_count": os.cpu_count() or 1,
        "cpu_model": model,
        "memory_bytes": memory,
        "kernel": platform.release(),
        "sysbench_version": sysbench_version,
        "engine_version": "",
    }


# -- README -----------------------------------------------------------------------------

COLUMN_DOCS = {
    "workload_id": "`<workload>-c<clients>`",
    "group": "the sysbench workload (all client counts of one workload are one group, for "
    "leave-one-workload-out evaluation); `pinned_read_only` is in group `oltp_read_only`",
    "kind": "cpu, io, lock or mixed (CPU work with server-side waits)",
    "engine / engine_version": "mariadb / the server's VERSION()",
    "cpu_count": "cores the server could use: 2, or 1 for the pinned cases",
    "memory_bytes": "the host's MemTotal",
    "window_s … thread_create_ms": "the WorkloadProfile fields as the agent's own profiler "
    "(agents/profile.py) measured them over a baseline window at the default tuple "
    "(size 2, oversubscribe 3, stall limit 500) right before the sweep (see agents/wire.py "
    "for units); the agent's own statements are excluded",
    "extras": "JSON object: thread pool statistics and waits per second, mean "
    "Threadpool_threads, server CPU busy (cores)",
    "best_thread_pool_size": "the smallest size whose mean is within the noise of the best "
    "mean: best − mean ≤ 2 × √(sem² + sem_best²), sem = std / √samples",
    "best_thread_pool_oversubscribe / best_thread_pool_stall_limit": "for the cases with "
    "secondary sweeps (at size 2): the default (3 / 500) unless another value beats it by "
    "more than the noise; empty otherwise",
    "knee_size": "smallest size reaching 95% of the best mean",
    "peak_throughput": "the best mean throughput of the size sweep (per `throughput_metric`)",
    "default_throughput": "mean throughput at the default size (= cpu_count)",
    "workload / sysbench_test / clients": "what ran: case name, sysbench script, client threads",
    "pinned_to_one_core": "the server's threads were pinned to CPU 0 with `taskset -a`",
    "throughput_metric": "transactions (commits + rollbacks per second) or queries (client "
    "statements per second; point selects and the Lua mix have no transactions)",
    "best_size_raw": "the size with the highest mean (noise included)",
    "throughput_size2 / gain_over_size2": "mean at size 2 and peak / that − 1",
    "noise_cv": "noise level: median over the sizes of the coefficient of variation of a "
    "point's kept 1-s samples",
    "differs_beyond_noise": "whether size 2 is below the best mean by more than the noise "
    "(more than 2 standard errors of the difference)",
    "other_cpu_cores": "mean CPU (cores) used by other processes of the shared host during "
    "the size sweep: /proc/stat busy time minus the server's and sysbench's",
    "sysbench_ok / sysbench_command": "sysbench ran through the whole sweep; its command "
    "(password masked)",
    "measured_at": "start of the size sweep (UTC)",
}

CURVE_DOCS = {
    "workload_id": "the case",
    "knob": "the swept knob; the others at their defaults (size 2, 3, 500)",
    "value": "the knob's value",
    "throughput": "mean of the kept samples (per the case's `throughput_metric`)",
    "throughput_std": "standard deviation of the kept samples",
    "samples": "number of kept samples (1 s each; the first 2 s after each change dropped)",
    "latency_ms": "mean query latency from the server's query_response_time histogram: "
    "execution time in the server (time queued in the pool before execution is not in it)",
    "throughput_cv": "std / mean",
    "throughput_samples": "JSON list of the kept samples, in measuring order",
    "visit_means": "JSON list of the mean of each visit (one per interleaved repeat)",
    "server_cpu_cores / load_cpu_cores / other_cpu_cores": "mean CPU use over the kept "
    "samples: mariadbd, sysbench, and every other process of the host",
}


def results_table(workloads: pd.DataFrame) -> str:
    lines = [
        "| workload | clients | metric | size 2 | best size (raw) | peak | gain over size 2 "
        "| best within noise | knee | noise (CV) | beyond noise? | other CPU |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in workloads.to_dict(orient="records"):
        lines.append(
            f"| {row['workload']} | {row['clients']} | {row['throughput_metric'][:1]}ps "
            f"| {row['throughput_size2']:.0f} | {row['best_size_raw']} "
            f"| {row['peak_throughput']:.0f} | {row['gain_over_size2']:+.1%} "
            f"| {row[f'best_{SIZE}']} | {row['knee_size']} | {row['noise_cv']:.1%} "
            f"| {'yes' if row['differs_beyond_noise'] else 'no'} "
            f"| {row['other_cpu_cores']:.2f} |"
        )
    return "\n".join(lines)


def secondary_table(curves: pd.DataFrame) -> str:
    rows = curves[curves["knob"] != SIZE]
    if rows.empty:
        return "(none)"
    lines = ["| workload | knob | value | mean | CV | samples |", "|---|---|---|---|---|---|"]
    for row in rows.to_dict(orient="records"):
        lines.append(
            f"| {row['workload_id']} | {row['knob']} | {row['value']} | {row['throughput']:.0f} "
            f"| {row['throughput_cv']:.1%} | {row['samples']} |"
        )
    return "\n".join(lines)


#: Mean CPU (cores) of other processes above which the README calls the host busy.
BUSY_HOST_CORES = 0.25


def host_load(other_cpu_cores: pd.Series) -> str:
    """The README's sentence on what else ran on the host while the sweeps measured."""
    figures = (
        f"other processes used on average {other_cpu_cores.mean():.2f} cores (max "
        f"{other_cpu_cores.max():.2f} over a case) during the sweeps (`other_cpu_cores`)"
    )
    if other_cpu_cores.mean() > BUSY_HOST_CORES:
        return (
            f"**Shared with other processes**: {figures}; samples were not filtered, so treat "
            "the noise figures as those of a busy host."
        )
    return f"Quiet: {figures}."


def readme(
    manifest: dict[str, Any],
    *,
    workloads: pd.DataFrame,
    curves: pd.DataFrame,
    description: dict[str, Any],
) -> str:
    columns = "\n".join(f"| `{k}` | {v} |" for k, v in COLUMN_DOCS.items())
    curve_columns = "\n".join(f"| `{k}` | {v} |" for k, v in CURVE_DOCS.items())
    files = "\n".join(
        f"| `{name}` | {meta['bytes']:,} | `{meta['sha256']}` |"
        for name, meta in manifest["files"].items()
    )
    servers = "\n".join(
        f"- `{name}`: `{' '.join(args)}`" for name, args in description["servers"].items()
    )
    commands = "\n".join(
        f"- `{row['workload_id']}`: `{row['sysbench_command']}`"
        for row in workloads.to_dict(orient="records")
    )
    timing = description["timing"]
    other = workloads["other_cpu_cores"]
    beyond = workloads[workloads["differs_beyond_noise"]]
    within = workloads[~workloads["differs_beyond_noise"]]
    beyond_text = ", ".join(beyond["workload_id"]) or "none"
    within_text = ", ".join(within["workload_id"]) or "none"
    cores = description["host"]["cpu_count"]
    # Changes made to the measured tables after the run, each with its reason.
    notes = "".join(f"\n- {note}" for note in description.get("notes", []))
    notes = f"\nChanged after the measurement:\n{notes}\n" if notes else ""
    return f"""# {manifest["name"]} — MariaDB thread-pool sweeps measured on a {cores}-core host

Real curves: for each case a sysbench workload runs against a private MariaDB with
`thread_handling=pool-of-threads` while `pooltune-agent`'s sweep engine (`agents/sweep.py`)
holds each `thread_pool_size` of the grid {list(timing["size_grid"])} for {timing["dwell_s"]:g} s,
samples throughput every {timing["sample_period_s"]:g} s through the server's `extra_port`,
drops the first {timing["discard_samples"]} sample(s) after each change (actuation lag) and
visits the grid {timing["repeats"]} times in interleaved order (forwards, backwards, then
the values measured latest so far first) so that drift spreads over every size. Two cases
also sweep `thread_pool_oversubscribe` {list(timing["oversubscribe_grid"])} and
`thread_pool_stall_limit` {list(timing["stall_grid"])} (at size 2, {timing["secondary_repeats"]}
repeats). The original tuple was restored after every sweep.

Made with (end to end: servers, tables, load, sweeps, these files):

```sh
{manifest["command"]}
```

Created {manifest["created_at"]}. Read with `trainer.datasets.load_dataset("{manifest["name"]}")`
(checks every file against `MANIFEST.json`); import with
`pooltune-trainer import-dataset {manifest["name"]}`.
{notes}
## Where and how

- Host: {description["host"]["cpu_count"]} cores ({description["host"]["cpu_model"]}),
  {description["host"]["memory_bytes"] / 2**30:.1f} GiB, Linux {description["host"]["kernel"]}.
  {host_load(other)}
- Server: MariaDB {description["engine_version"]} (Debian package); sysbench:
  {description["host"]["sysbench_version"]} (Debian package). Both share the same cores.
- Server command lines (the suite's `tests/fixtures/mariadb.py` options, later ones win):
{servers}
- The IO-bound server commits with `innodb_flush_log_at_trx_commit=1`, binlog on with
  `sync_binlog=1`, an 8 MiB buffer pool and 4 × 25,000 rows; the main server uses
  `innodb_flush_log_at_trx_commit=2` and a 128 MiB buffer pool (CPU-bound).
- Workloads: the sysbench OLTP scripts on 4 tables × 10,000 rows; `hot_rows` = oltp_read_write
  on one table of 10 rows (row-lock contention; deadlocks ignored and retried);
  `cpu_wait_mix` = `scripts/sysbench/cpu_wait_mix.lua` (4 point selects, about 2 ms of
  `BENCHMARK(2500, MD5())` CPU work and a 10 ms `SELECT SLEEP` per event); `pinned_read_only` =
  oltp_read_only with every server thread pinned to CPU 0 (`taskset -a -p -c 0`; sysbench
  still uses both cores).
- Each case: {timing["warmup_s"]:g} s warm-up, a {timing["baseline_s"]:g} s baseline window at
  the default tuple (the profile), then the sweeps.
- sysbench commands:
{commands}

## Results (pool size)

Best size = the smallest size within the noise of the best mean (below it by at most two
standard errors of the difference, `2 × √(sem² + sem_best²)`, `sem = std / √samples`); noise
(CV) = the median coefficient of variation of a point's 1-s samples; knee = the smallest size
reaching 95% of the best mean. Gain = best mean / mean at size 2 (the default on 2 cores) − 1;
the raw best is biased upwards by the noise (it is the maximum of {len(timing["size_grid"])}
noisy means).

{results_table(workloads)}

Size 2 is below the best by more than the noise in: {beyond_text}.
No difference larger than the noise between size 2 and the best in: {within_text}.

### Secondary knobs (at size 2)

{secondary_table(curves)}

## Files

| file | bytes | sha256 |
|---|---|---|
{files}

## `workloads.parquet` — one row per case

| column | meaning |
|---|---|
{columns}

## `curves.parquet` — curve points, long format

| column | meaning |
|---|---|
{curve_columns}
"""


# -- main -------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: one case, ~2 minutes")
    parser.add_argument("--cases", default="", help="comma list of workload names to run")
    parser.add_argument("--clients", default="", help="comma list of client counts to run")
    parser.add_argument("--out", type=Path, default=None, help="dataset directory")
    parser.add_argument("--work-dir", type=Path, default=None, help="logs and state (tmp)")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("agents").setLevel(logging.WARNING)
    cores = os.cpu_count() or 1
    name = f"mariadb-{cores}core-v1"
    if args.quick:
        timing = QUICK_TIMING
        cases = [Case(WORKLOADS["oltp_read_only"], 16, secondary=True)]
        out = args.out or Path(tempfile.gettempdir()) / f"pooltune-{name}-quick"
    else:
        timing = FULL_TIMING
        cases = full_cases()
        out = args.out or REPO / "datasets" / name
    if args.cases:
        wanted = [c.strip() for c in args.cases.split(",") if c.strip()]
        unknown = set(wanted) - set(WORKLOADS)
        if unknown:
            parser.error(f"unknown cases {sorted(unknown)}; known: {', '.join(WORKLOADS)}")
        if args.quick:
            cases = [Case(WORKLOADS[w], 16, secondary=True) for w in wanted]
        else:
            cases = [c for c in cases if c.workload.name in wanted]
    if args.clients:
        counts = {int(c) for c in args.clients.split(",") if c.strip()}
        cases = [c for c in cases if c.clients in counts]
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="pooltune-dataset-"))
    work_dir.mkdir(parents=True, exist_ok=True)
    estimate = sum(timing.case_seconds(c) for c in cases)
    logger.info(
        "%d cases, about %.0f minutes of measuring (+ server setup); logs in %s",
        len(cases),
        estimate / 60,
        work_dir,
    )

    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        logger.warning("%s: stopping after restoring the knobs", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    host = host_facts()
    servers: dict[str, Server] = {}
    results: list[CaseResult] = []
    started = time.monotonic()
    try:
        for number, case in enumerate(cases, start=1):
            if stop.is_set():
                break
            server_name = case.workload.server
            if server_name not in servers:
                servers[server_name] = start_server(server_name, work_dir)
            server = servers[server_name]
            logger.info(
                "case %d/%d: %s (%d clients), %.0f min elapsed",
                number,
                len(cases),
                case.workload_id,
                case.clients,
                (time.monotonic() - started) / 60,
            )
            try:
                result = measure_case(server, case, timing, stop=stop, log_dir=work_dir)
            except KeyboardInterrupt:
                break
            except Exception:
                if stop.is_set():
                    break
                logger.exception("case %s failed; going on", case.workload_id)
                continue
            results.append(result)
            sys.stdout.write(f"\n== {case.workload_id}\n{format_table(result.size)}\n")
            sys.stdout.flush()
    finally:
        for server in servers.values():
            server.target.close()
            stop_mariadb(server.server)
    if not results:
        logger.error("nothing measured")
        return 1
    if stop.is_set():
        logger.warning("interrupted: writing the %d cases measured so far", len(results))
    host["engine_version"] = next(iter(servers.values())).version
    workloads, curves = build_tables(results, host)
    description = {
        "host": host,
        "engine_version": host["engine_version"],
        "servers": {n: s.command_line for n, s in servers.items()},
        "timing": {k: list(v) if isinstance(v, tuple) else v for k, v in timing.__dict__.items()},
        "cases": [r.case.workload_id for r in results],
        "measuring_minutes": round((time.monotonic() - started) / 60, 1),
        "other_cpu_cores_mean": float(workloads["other_cpu_cores"].mean()),
    }
    command = ".venv/bin/python -m scripts.make_mariadb_dataset" + (
        " " + shlex.join(argv if argv is not None else sys.argv[1:])
        if (argv if argv is not None else sys.argv[1:])
        else ""
    )
    manifest = write_dataset(
        out,
        name=name,
        workloads=workloads,
        curves=curves,
        command=command,
        description=description,
    )
    (out / "README.md").write_text(
        readme(manifest, workloads=workloads, curves=curves, description=description)
    )
    sys.stdout.write(f"\n{results_table(workloads)}\n\nwrote {out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
