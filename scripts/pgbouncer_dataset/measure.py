"""Measure one case: a PgBouncer in front of a lab PostgreSQL under pgbench while
:mod:`agents.sweep` sweeps ``default_pool_size`` in interleaved repeats.

One PostgreSQL cluster serves every case (pgbench's tables at :data:`SCALE`); one PgBouncer
per pool mode is started on first use. Session pooling is driven with a new connection per
transaction (``pgbench -C``): with connections held for the whole run, clients beyond the
pool would wait until ``query_wait_timeout`` and fail, which measures the timeout, not the
pool. Each session client has a pgbench thread of its own (``-j`` = clients): PgBouncer
answers a session's login only once a server connection is free, and pgbench connects
synchronously, so a thread serving several clients blocks in a login while its other
clients, mid-transaction, hold every server connection: a deadlock (seen at size 2 with 16
clients on 2 threads). The session PgBouncer trusts its clients (``auth_type = trust``) so
that the per-transaction logins measure pooling, not SCRAM's hashing.
"""

from __future__ import annotations

import logging
import math
import shlex
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from agents.config import TargetSection
from agents.hostcpu import HostCpu
from agents.state import OriginalTupleFile
from agents.sweep import Sweeper, SweepPlan, SweepResult
from agents.targets.pgbouncer import PgBouncerTarget
from lab.pgbench import Endpoint, Pgbench
from lab.pgbouncer import DatabaseEntry, PgBouncer, start_pgbouncer, stop_pgbouncer
from lab.postgres import PostgresCluster, start_postgres, stop_postgres
from scripts.dataset_progress import progress_logger
from scripts.pgbouncer_dataset.cases import SCALE, SIZE, Case, Timing

logger = logging.getLogger("make_pgbouncer_dataset")

#: PostgreSQL settings on top of lab/postgres.py's (max_connections 200 covers the grid).
SERVER_SETTINGS = {"shared_buffers": "128MB"}
#: PgBouncer settings per pool mode on top of lab/pgbouncer.py's.
BOUNCER_SETTINGS = {
    "transaction": {},
    "session": {"auth_type": "trust"},
}
#: pgbench options per pool mode.
PGBENCH_ARGS = {"transaction": (), "session": ("-C",)}
#: pgbench threads in transaction pooling (one per core); session pooling: one per client.
TRANSACTION_JOBS = 2
#: Mean CPU (cores) of other processes above which a case counts as measured on a busy host.
BUSY_CORES = 0.25


@dataclass
class DatasetLab:
    """The cluster, its pgbench, and a PgBouncer with the measuring target per pool mode."""

    cluster: PostgresCluster
    pgbench: Pgbench
    state_dir: Path
    bouncers: dict[str, tuple[PgBouncer, PgBouncerTarget]] = field(default_factory=dict)

    def bouncer(self, mode: str) -> tuple[PgBouncer, PgBouncerTarget]:
        if mode not in self.bouncers:
            bouncer = start_pgbouncer(
                self.cluster,
                databases=(DatabaseEntry("bench"),),
                pool_mode=mode,
                settings=BOUNCER_SETTINGS[mode],
            )
            try:
                target = PgBouncerTarget(TargetSection.model_validate(bouncer.target_section()))
                target.connect()
                info = target.check()
            except BaseException:
                stop_pgbouncer(bouncer)
                raise
            logger.info("PgBouncer (%s pooling) ready: %s", mode, info.version)
            self.bouncers[mode] = (bouncer, target)
        return self.bouncers[mode]

    def close(self) -> None:
        self.pgbench.close()
        for bouncer, target in self.bouncers.values():
            target.close()
            stop_pgbouncer(bouncer)
        stop_postgres(self.cluster)


def start_lab(state_dir: Path) -> DatasetLab:
    logger.info("starting PostgreSQL and filling pgbench's tables (scale %d)", SCALE)
    cluster = start_postgres(prefix="pooltune-dataset-pg-", settings=SERVER_SETTINGS)
    try:
        pgbench = Pgbench(cluster, scale=SCALE)
        pgbench.initialise()
    except BaseException:
        stop_postgres(cluster)
        raise
    return DatasetLab(cluster=cluster, pgbench=pgbench, state_dir=state_dir)


def other_cpu_cores(seconds: float, *, stop: threading.Event) -> float | None:
    """CPU (cores) the host spends over ``seconds`` while this run's servers are idle: what
    other processes take."""
    host = HostCpu()
    before = host.busy_seconds()
    if stop.wait(seconds):
        return None
    after = host.busy_seconds()
    if before is None or after is None:
        return None
    return max(0.0, after - before) / seconds


def wait_for_quiet(wait_s: float, *, stop: threading.Event) -> float | None:
    """Other processes' CPU before a case (3-s windows), waiting up to ``wait_s`` for it to
    fall to :data:`BUSY_CORES`; the last figure either way."""
    deadline = time.monotonic() + wait_s
    while True:
        cores = other_cpu_cores(3.0, stop=stop)
        if cores is None or cores <= BUSY_CORES or time.monotonic() >= deadline:
            return cores
        logger.info("  other processes use %.2f cores: waiting for a quiet machine", cores)


def printable(args: object) -> str:
    """A process's command line as one shell-quoted string."""
    if isinstance(args, list | tuple):
        return shlex.join(str(part) for part in args)
    return str(args)


@dataclass
class MeasuredCase:
    case: Case
    sweep: SweepResult
    pgbench_command: str
    pgbench_ok: bool
    #: Other processes' CPU (cores) right before the case, with our servers idle.
    other_cpu_before: float | None
    engine_version: str


def measure_case(
    lab: DatasetLab,
    case: Case,
    timing: Timing,
    *,
    stop: threading.Event,
    wait_quiet_s: float,
) -> MeasuredCase:
    """Run ``case``'s load and sweep; KeyboardInterrupt when ``stop`` is set before the
    sweep (the sweep itself raises SweepInterrupted, after restoring the pool size)."""
    bouncer, target = lab.bouncer(case.pool_mode)
    quiet = wait_for_quiet(wait_quiet_s, stop=stop)
    if stop.is_set():
        raise KeyboardInterrupt
    endpoint = Endpoint(bouncer.host, bouncer.port, "bench", lab.cluster.role, lab.cluster.password)
    run = lab.pgbench.start(
        endpoint,
        case.workload.script,
        clients=case.clients,
        jobs=case.clients if case.pool_mode == "session" else TRANSACTION_JOBS,
        time_s=math.ceil(timing.case_seconds(case) + 60),
        extra_args=PGBENCH_ARGS[case.pool_mode],
    )
    try:
        command = printable(run.process.args)
        if stop.wait(timing.warmup_s):
            raise KeyboardInterrupt
        if not run.running():
            raise RuntimeError(f"pgbench exited early:\n{run.output()[-2000:]}")
        assert bouncer.pid is not None
        plan = SweepPlan(
            knob=SIZE,
            values=case.grid(timing.size_grid),
            dwell_s=timing.dwell_s,
            repeats=timing.repeats,
            sample_period_s=timing.sample_period_s,
            discard_samples=timing.discard_samples,
            metric="transactions",
            baseline_s=timing.baseline_s,
            load_pids=(run.process.pid, bouncer.pid),
            seed=sum(map(ord, case.case_id)),
        )
        sweep = Sweeper(
            target=target,
            plan=plan,
            state=OriginalTupleFile(lab.state_dir / case.pool_mode / "original-tuple.json"),
            stop=stop,
            on_progress=progress_logger(logger, case.case_id, value="size", unit=" tps"),
        ).run()
        pgbench_ok = run.running()
        if not pgbench_ok:
            logger.warning("%s: pgbench ended before the sweep did", case.case_id)
    finally:
        run.stop()
    return MeasuredCase(
        case=case,
        sweep=sweep,
        pgbench_command=command,
        pgbench_ok=pgbench_ok,
        other_cpu_before=quiet,
        engine_version=target.host_facts().engine_version,
    )
