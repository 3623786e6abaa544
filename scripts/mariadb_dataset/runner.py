"""Measure a list of cases, writing each one the moment it ends (``records.py``): the
servers start on first use and stop after their last case of the run; a case measured
while other processes were busy is stored as ``busy``; a stop request ends the run after
the knobs are restored, and the cases finished so far stay."""

from __future__ import annotations

import logging
import shutil
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agents.sweep import SweepInterrupted, format_table, write_csv
from lab.mariadb import release_of
from scripts import paired_check
from scripts.mariadb_dataset.cases import Case, Timing, case_definition
from scripts.mariadb_dataset.measure import (
    DatasetServer,
    MeasuredCase,
    measure_case,
    start_server,
)
from scripts.mariadb_dataset.records import (
    CaseRecord,
    Status,
    case_dir,
    supersede,
    write_record,
)
from scripts.mariadb_dataset.resume import other_cpu_summary

logger = logging.getLogger("make_mariadb_dataset")


def other_cpu_of(measured: MeasuredCase) -> tuple[float | None, float | None]:
    """Mean and largest CPU (cores) of other processes over every sample of the case."""
    values = [
        s.other_cpu
        for sweep in (measured.size, *measured.secondary.values())
        for s in sweep.samples
        if s.other_cpu is not None
    ]
    if not values:
        return None, None
    return statistics.fmean(values), max(values)


def make_record(
    measured: MeasuredCase,
    *,
    dataset: str,
    timing: Timing,
    host: dict[str, Any],
    server: DatasetServer,
    started_at: datetime,
    measuring_s: float,
    busy_cores: float,
    command: str,
) -> CaseRecord:
    """The stored form of a measured case, its status decided here: failed when sysbench
    ended early, busy when other processes used more than ``busy_cores``, else done."""
    case = measured.case
    mean, largest = other_cpu_of(measured)
    other = other_cpu_summary(mean, threshold=busy_cores) | {"max_sample_cores": largest}
    status: Status = "done"
    if not measured.sysbench_ok:
        status = "failed"
    elif not other["quiet"]:
        status = "busy"
    return CaseRecord(
        dataset=dataset,
        workload_id=case.workload_id,
        status=status,
        definition=case_definition(case, timing),
        host=dict(host) | {"engine_version": release_of(server.version)},
        server={
            "name": server.name,
            "version": server.version,
            "command_line": server.command_line,
            "started_at": server.started_at.isoformat(timespec="seconds"),
            "cases_before": list(server.cases_measured),
        },
        sysbench={
            "command": measured.sysbench_command,
            "ok": measured.sysbench_ok,
            "version": host.get("sysbench_version", ""),
            "log": "sysbench.log",
        },
        timings={
            "started_at": started_at.isoformat(timespec="seconds"),
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "measuring_s": round(measuring_s, 1),
            "prepare_s": round(measured.prepare_s, 1),
            "estimated_s": round(timing.case_seconds(case), 1),
            "command": command,
        },
        other_cpu=other,
        sweeps={measured.size.knob: measured.size} | dict(measured.secondary),
    )


def store(out: Path, record: CaseRecord, *, sysbench_log: Path) -> Path:
    """Write the record, a CSV per sweep (curve and samples) and sysbench's output."""
    directory = case_dir(out, record.workload_id)
    directory.mkdir(parents=True, exist_ok=True)
    for knob, sweep in record.sweeps.items():
        write_csv(sweep, directory / f"{knob}.csv")
    if sysbench_log.exists():
        shutil.copyfile(sysbench_log, directory / "sysbench.log")
    # Last: the record is what marks the case as measured.
    return write_record(out, record)


def keep_failure_log(server: DatasetServer, path: Path) -> None:
    """Keep the server's error log of a failed case next to its sysbench log, and show
    its tail: the server's own directory is removed when it stops."""
    if server.keep_log(path) is None:
        logger.error("the server left no error log")
        return
    logger.error(
        "the server's error log is kept in %s; its end:\n%s", path, server.server.log_tail(15)
    )


def measure_cases(
    cases: Sequence[Case],
    *,
    dataset: str,
    out: Path,
    timing: Timing,
    host: dict[str, Any],
    work_dir: Path,
    stop: threading.Event,
    busy_cores: float,
    command: str,
    on_engine_version: Callable[[str], None] = lambda _version: None,
) -> list[CaseRecord]:
    """Measure ``cases`` in order and store each; returns the records written. A failed
    case is logged and skipped, its server's error log kept in ``work_dir`` (a server that
    died starts again for the next case); ``on_engine_version`` may refuse a server (raise) before
    anything is measured on it."""
    work_dir.mkdir(parents=True, exist_ok=True)
    last_use = {case.workload.server: index for index, case in enumerate(cases)}
    servers: dict[str, DatasetServer] = {}
    written: list[CaseRecord] = []
    run_started = time.monotonic()
    try:
        for number, case in enumerate(cases, start=1):
            if stop.is_set():
                break
            name = case.workload.server
            if name not in servers:
                servers[name] = start_server(name, work_dir)
                on_engine_version(servers[name].version)
            server = servers[name]
            logger.info(
                "case %d/%d: %s (%d clients), about %.1f min; %.0f min elapsed",
                number,
                len(cases),
                case.workload_id,
                case.clients,
                timing.case_seconds(case) / 60,
                (time.monotonic() - run_started) / 60,
            )
            log_path = work_dir / f"{case.workload_id}.sysbench.log"
            started_at = datetime.now(UTC)
            started = time.monotonic()
            try:
                measured = measure_case(server, case, timing, stop=stop, log_path=log_path)
            except (KeyboardInterrupt, SweepInterrupted):
                break
            except Exception:
                if stop.is_set():
                    break
                logger.exception("case %s failed; going on", case.workload_id)
                keep_failure_log(server, work_dir / f"{case.workload_id}.mariadb-error.log")
                if not server.alive:
                    logger.error("the %s server died; the next case starts it again", name)
                    servers.pop(name).close()
                continue
            record = make_record(
                measured,
                dataset=dataset,
                timing=timing,
                host=host,
                server=server,
                started_at=started_at,
                measuring_s=time.monotonic() - started,
                busy_cores=busy_cores,
                command=command,
            )
            moved = supersede(out, case.workload_id)
            if moved is not None:
                logger.info("the earlier measurement of %s moved to %s", case.workload_id, moved)
            path = store(out, record, sysbench_log=log_path)
            server.cases_measured.append(case.workload_id)
            written.append(record)
            logger.info(
                "%s: %s (other processes %.2f cores), written to %s",
                case.workload_id,
                record.status,
                record.other_cpu["mean_cores"] or float("nan"),
                path.parent,
            )
            sys.stdout.write(f"\n== {case.workload_id} [{record.status}]\n")
            sys.stdout.write(f"{format_table(measured.size)}\n")
            paired = paired_check.flag(measured.size)
            if paired is not None:
                logger.info("%s: %s", case.workload_id, paired)
            sys.stdout.flush()
            if last_use[name] == number - 1:
                servers.pop(name).close()
    finally:
        for server in servers.values():
            server.close()
    return written
