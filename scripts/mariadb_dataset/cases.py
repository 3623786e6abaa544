"""What a MariaDB dataset measures: the servers, the sysbench workloads, the cases
(workload × clients), how long each measurement takes, and how a catalog's cases are
selected. The catalogs themselves are ``catalog_v1.py`` to ``catalog_v4.py``."""

from __future__ import annotations

import fnmatch
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from agents import knobs
from agents.profile import ThroughputMetric
from agents.sweep import SweepPlan
from lab.mariadb import SYNC_TIMING_ARGS

REPO = Path(__file__).resolve().parents[2]
SIZE = "thread_pool_size"
OVERSUBSCRIBE = "thread_pool_oversubscribe"
STALL = "thread_pool_stall_limit"
TUNED = [SIZE, OVERSUBSCRIBE, STALL]

SIZE_GRID = (1, 2, 3, 4, 6, 8, 16, 32, 64)
OVERSUBSCRIBE_GRID = (1, 3, 10, 30)
STALL_GRID = (10, 100, 500, 2000)

#: Server options on top of lab/mariadb.py's (``--innodb-buffer-pool-size=32M``,
#: ``--max-connections=600``, ``--skip-log-bin``, ...). Every server times its
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
    # Commit-bound: every commit fsyncs the redo log and the binlog; the data fits.
    "fsync": (
        *SYNC_TIMING_ARGS,
        "--innodb-flush-log-at-trx-commit=1",
        "--log-bin=binlog",
        "--sync-binlog=1",
        "--innodb-buffer-pool-size=128M",
    ),
    # Read-IO-bound: a buffer pool far smaller than the data, reads bypass the page cache
    # (O_DIRECT), commits do not wait for the disk.
    "readio": (
        *SYNC_TIMING_ARGS,
        "--innodb-flush-log-at-trx-commit=2",
        "--innodb-buffer-pool-size=8M",
        "--innodb-flush-method=O_DIRECT",
    ),
}

#: One line per server for the README.
SERVER_NOTES: dict[str, str] = {
    "main": "CPU-bound: 128 MiB buffer pool (the data fits), `innodb_flush_log_at_trx_commit=2`",
    "io": (
        "IO-bound: `innodb_flush_log_at_trx_commit=1`, binlog with `sync_binlog=1`, an 8 MiB "
        "buffer pool smaller than the data"
    ),
    "fsync": (
        "commit-bound: `innodb_flush_log_at_trx_commit=1`, binlog with `sync_binlog=1`, "
        "128 MiB buffer pool (the data fits)"
    ),
    "readio": (
        "read-IO-bound: 8 MiB buffer pool, `innodb_flush_method=O_DIRECT` (reads miss the page "
        "cache too), `innodb_flush_log_at_trx_commit=2`"
    ),
}


@dataclass(frozen=True)
class Workload:
    """A sysbench workload on one of the servers; ``group`` (default: the name) is the
    unit of leave-one-workload-out evaluation, so variants of one load share it."""

    name: str
    kind: str
    server: str
    test: str
    database: str = "sbtest"
    tables: int = 4
    table_size: int = 10_000
    metric: ThroughputMetric = "transactions"
    #: Pin every server thread to CPU 0 (a one-core server; sysbench keeps every core).
    pinned: bool = False
    group: str = ""
    extra_args: tuple[str, ...] = ()
    #: What it is, for the README.
    description: str = ""

    @property
    def group_name(self) -> str:
        return self.group or self.name

    @property
    def script(self) -> str:
        """The sysbench script as the README shows it (ours relative to the repository)."""
        path = Path(self.test)
        return str(path.relative_to(REPO)) if path.is_absolute() else self.test


@dataclass(frozen=True)
class Case:
    workload: Workload
    clients: int
    #: Whether the oversubscribe and stall-limit sweeps run too.
    secondary: bool = False
    #: Pool sizes measured on top of the timing's grid (loads whose optimum may lie above it).
    extra_sizes: tuple[int, ...] = ()
    #: Seconds dropped after each change instead of the timing's (:meth:`Timing.settled`):
    #: a load whose queue carries a pool size's state into the next visit.
    settle_s: float = 0.0

    @property
    def workload_id(self) -> str:
        return f"{self.workload.name}-c{self.clients}"


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
    #: Pool-size sweeps are paired: the engine default (the host's cores) is visited
    #: before and after every other size (agents/sweep/plan.py, ``reference``).
    paired: bool = False

    def sizes(self, case: Case) -> tuple[int, ...]:
        """The pool sizes ``case`` measures: the grid plus the case's extra sizes (and,
        paired, the reference)."""
        extra = {paired_reference()} if self.paired else set()
        return tuple(sorted(set(self.size_grid) | set(case.extra_sizes) | extra))

    def plan(self, knob: str, values: tuple[int, ...], repeats: int, **run: Any) -> SweepPlan:
        """A sweep of ``knob`` over ``values`` at this timing; ``run`` adds what only a
        live run knows (metric, load pids, seed, baseline, reference)."""
        return SweepPlan(
            knob=knob,
            values=values,
            dwell_s=self.dwell_s,
            repeats=repeats,
            sample_period_s=self.sample_period_s,
            discard_samples=self.discard_samples,
            **run,
        )

    def for_case(self, case: Case) -> Timing:
        """The timing ``case`` is measured with: this one, settled where the case asks."""
        return self.settled(case.settle_s) if case.settle_s > 0 else self

    def size_plan(self, case: Case, **run: Any) -> SweepPlan:
        """The pool-size sweep of ``case``: the grid ``repeats`` times and, paired, the
        reference before every other size and once at the end."""
        timing = self.for_case(case)
        reference = paired_reference() if timing.paired else None
        return timing.plan(SIZE, timing.sizes(case), timing.repeats, reference=reference, **run)

    def size_visits(self, case: Case) -> int:
        """Visits of the pool-size sweep."""
        return len(self.size_plan(case).visits)

    def case_seconds(self, case: Case) -> float:
        """Expected seconds of measuring (warm-up, baseline, sweeps), without the setup."""
        timing = self.for_case(case)
        per_visit = timing.dwell_s + 0.3
        total = timing.warmup_s + timing.baseline_s + per_visit * timing.size_visits(case)
        if case.secondary:
            total += (
                per_visit
                * timing.secondary_repeats
                * (len(timing.oversubscribe_grid) + len(timing.stall_grid))
            )
        return total + 3.0

    def load_seconds(self, case: Case) -> int:
        """How long ``case``'s load runs: the estimate with room to spare, since a load
        that ends first fails the case (v3's wait_10ms-c256 swept for 448 s, estimated 383
        s); the load is stopped when the sweep ends."""
        return math.ceil(1.5 * self.case_seconds(case) + 60)

    def settled(self, seconds: float) -> Timing:
        """This timing with ``seconds`` dropped after each change instead, each visit longer
        by as much, so that a visit keeps as many samples: for a server whose queue carries
        a pool size's state into the next visit for longer than the usual discard."""
        discard = max(self.discard_samples, math.ceil(seconds / self.sample_period_s - 1e-9))
        extra = (discard - self.discard_samples) * self.sample_period_s
        return replace(self, discard_samples=discard, dwell_s=self.dwell_s + extra)

    def as_dict(self) -> dict[str, Any]:
        """The timing as stored with every case; ``paired`` only when set, so that the
        cases measured before paired sweeps existed keep their definition."""
        stored = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}
        if not self.paired:
            del stored["paired"]
        return stored


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


def paired_reference() -> int:
    """The reference of a paired sweep: the engine default pool size on this host."""
    return knobs.knob(knobs.Engine.MARIADB, SIZE).default_for(os.cpu_count() or 1)


def case_definition(case: Case, timing: Timing) -> dict[str, Any]:
    """Everything that decides what a case measures: the workload, the clients, the
    server's options and the timing (the case's own, :meth:`Timing.for_case`). A stored case
    whose definition differs from the catalog's was measured for another catalog and is
    measured again."""
    timing = timing.for_case(case)
    workload = asdict(case.workload)
    workload["test"] = case.workload.script
    workload["extra_args"] = list(case.workload.extra_args)
    workload.pop("description")
    return {
        "workload": workload,
        "clients": case.clients,
        "secondary": case.secondary,
        "sizes": list(timing.sizes(case)),
        "server_options": list(SERVER_OPTIONS[case.workload.server]),
        "timing": timing.as_dict(),
    }


@dataclass(frozen=True)
class Catalog:
    """A dataset's cases: ``version`` names the dataset (``mariadb-<cores>core-<version>``)."""

    version: str
    workloads: dict[str, Workload]
    cases: Callable[[], list[Case]]
    #: The cases of ``--quick`` without ``--cases``.
    quick_cases: Callable[[], list[Case]]
    #: What the README says about the catalog as a whole.
    summary: str = ""
    notes: tuple[str, ...] = field(default=())
    #: How long each size is held and how often the grid is visited.
    timing: Timing = FULL_TIMING

    def dataset_name(self, cpu_count: int) -> str:
        return f"mariadb-{cpu_count}core-{self.version}"


def _matches(case: Case, patterns: Sequence[str]) -> bool:
    return any(
        fnmatch.fnmatchcase(case.workload.name, p) or fnmatch.fnmatchcase(case.workload_id, p)
        for p in patterns
    )


def select_cases(
    catalog: Catalog,
    *,
    quick: bool = False,
    patterns: Sequence[str] = (),
    clients: Sequence[int] = (),
) -> list[Case]:
    """The catalog's cases whose workload name or case id (``<workload>-c<clients>``)
    matches one of ``patterns`` (shell wildcards), narrowed to ``clients``; every case
    when neither is given, or the catalog's quick cases with ``quick`` and no patterns.
    A pattern that matches nothing is a ValueError naming the known workloads."""
    cases = catalog.quick_cases() if quick and not patterns else catalog.cases()
    if patterns:
        unmatched = [p for p in patterns if not any(_matches(c, [p]) for c in cases)]
        if unmatched:
            raise ValueError(
                f"no case matches {unmatched}; workloads: {', '.join(catalog.workloads)}"
            )
        cases = [c for c in cases if _matches(c, patterns)]
    if clients:
        cases = [c for c in cases if c.clients in clients]
    return cases
