"""Measure one case: a lab MariaDB under sysbench while :mod:`agents.sweep` sweeps the pool
size (and, for some cases, oversubscribe and the stall limit) in interleaved repeats."""

from __future__ import annotations

import logging
import shutil
import threading
import time
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agents.config import TargetSection
from agents.state import OriginalTupleFile
from agents.sweep import Sweeper, SweepPlan, SweepResult
from agents.targets.mariadb import MariaDBTarget
from lab.mariadb import MariaDBServer, start_mariadb, stop_mariadb
from lab.processes import pinned_to_one_cpu
from lab.sysbench import LOCK_ERRORS, SysbenchLoad, printable_command
from scripts.dataset_progress import progress_logger
from scripts.mariadb_dataset.cases import (
    OVERSUBSCRIBE,
    REPO,
    SERVER_OPTIONS,
    STALL,
    TUNED,
    Case,
    Timing,
)

logger = logging.getLogger("make_mariadb_dataset")


@dataclass
class DatasetServer:
    """A lab server of the dataset with the measuring connection (over its extra port)."""

    name: str
    server: MariaDBServer
    target: MariaDBTarget
    state: OriginalTupleFile
    version: str
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    #: The cases measured on this server so far, in order (its history is provenance).
    cases_measured: list[str] = field(default_factory=list)

    @property
    def command_line(self) -> list[str]:
        return list(self.server.command_line)

    @property
    def alive(self) -> bool:
        return self.server.process.poll() is None

    def keep_log(self, path: Path) -> Path | None:
        """Copy the server's error log to ``path`` (it goes with the server's directory
        when the server stops); None when there is none."""
        try:
            shutil.copyfile(self.server.log_file, path)
        except OSError:
            return None
        return path

    def close(self) -> None:
        self.target.close()
        stop_mariadb(self.server)


def start_server(name: str, state_root: Path) -> DatasetServer:
    """Start the server ``name`` of :data:`SERVER_OPTIONS` and connect the measuring target."""
    logger.info("starting MariaDB %r with %s", name, " ".join(SERVER_OPTIONS[name]))
    server = start_mariadb(prefix=f"pooltune-dataset-{name}-", extra_args=SERVER_OPTIONS[name])
    try:
        settings = TargetSection.model_validate(
            server.target_section(extra_port=server.extra_port, enable_latency=True)
        )
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
    return DatasetServer(
        name=name,
        server=server,
        target=target,
        state=OriginalTupleFile(state_root / name / "original-tuple.json"),
        version=info.version,
    )


@dataclass
class MeasuredCase:
    """The sweeps of one case and how sysbench ran during them."""

    case: Case
    size: SweepResult
    secondary: dict[str, SweepResult]
    sysbench_command: str
    sysbench_ok: bool
    #: Seconds spent filling the tables before the load started (0 when already filled).
    prepare_s: float = 0.0


def measure_case(
    server: DatasetServer, case: Case, timing: Timing, *, stop: threading.Event, log_path: Path
) -> MeasuredCase:
    """Run ``case``'s load on ``server`` (sysbench's output to ``log_path``) and sweep;
    KeyboardInterrupt when ``stop`` is set during the warm-up (the sweeps raise
    SweepInterrupted)."""
    timing = timing.for_case(case)
    workload = case.workload
    load = SysbenchLoad(
        server.server,
        database=workload.database,
        tables=workload.tables,
        table_size=workload.table_size,
    )
    started = time.monotonic()
    load.prepare(workload.test)
    prepare_s = time.monotonic() - started
    with (
        pinned_to_one_cpu(server.server.process.pid, enabled=workload.pinned),
        load.running(
            workload.test,
            threads=case.clients,
            time_s=timing.load_seconds(case),
            extra_args=workload.extra_args,
            ignore_errors=LOCK_ERRORS,
            log_path=log_path,
        ) as process,
    ):
        command = printable_command(process, relative_to=REPO)
        if stop.wait(timing.warmup_s):
            raise KeyboardInterrupt
        if process.poll() is not None:
            raise RuntimeError(f"sysbench exited early ({process.returncode}); see {log_path}")

        run: dict[str, Any] = {
            "metric": workload.metric,
            "load_pids": (process.pid,),
            "seed": zlib.crc32(case.workload_id.encode()) & 0xFFFF,
        }

        def sweep(plan: SweepPlan) -> SweepResult:
            sweeper = Sweeper(
                target=server.target,
                plan=plan,
                state=server.state,
                stop=stop,
                on_progress=progress_logger(logger, f"{case.workload_id} {plan.knob}"),
            )
            return sweeper.run()

        size = sweep(timing.size_plan(case, baseline_s=timing.baseline_s, **run))
        secondary: dict[str, SweepResult] = {}
        if case.secondary:
            for knob, grid in (
                (OVERSUBSCRIBE, timing.oversubscribe_grid),
                (STALL, timing.stall_grid),
            ):
                secondary[knob] = sweep(timing.plan(knob, grid, timing.secondary_repeats, **run))
        sysbench_ok = process.poll() is None
        if not sysbench_ok:
            logger.warning("%s: sysbench ended before the sweep did", case.workload_id)
    return MeasuredCase(
        case=case,
        size=size,
        secondary=secondary,
        sysbench_command=command,
        sysbench_ok=sysbench_ok,
        prepare_s=prepare_s,
    )
