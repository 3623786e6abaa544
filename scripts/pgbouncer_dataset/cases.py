"""What the PgBouncer dataset measures: the pgbench workloads, the cases (workload × pool
mode × clients), the pool-size grid and how long each measurement takes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.pgbench import SELECT_ONLY, TPCB_LIKE, Script, hot_row_script, scan_script, sleep_script

REPO = Path(__file__).resolve().parents[2]
SIZE = "default_pool_size"
#: PgBouncer's default pool size, always in the grid (the dataset's default throughput).
DEFAULT_SIZE = 20
SIZE_GRID = (1, 2, 4, 8, 12, 20, 32, 64, 128)
#: pgbench's scale: 400,000 accounts (about 60 MB), 4 branches.
SCALE = 4
POOL_MODES = ("transaction", "session")


@dataclass(frozen=True)
class Workload:
    """A pgbench script; ``name`` is the dataset's group (both pool modes share it, so
    leave-one-workload-out holds the whole script out)."""

    name: str
    kind: str
    script: Script


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("select_only", "cpu", SELECT_ONLY),
        Workload("tpcb_like", "lock", TPCB_LIKE),
        Workload("sleep_1ms", "wait", sleep_script(1)),
        Workload("sleep_5ms", "wait", sleep_script(5)),
        Workload("sleep_20ms", "wait", sleep_script(20)),
        Workload("hot_rows", "lock", hot_row_script(4)),
        Workload("scan", "cpu", scan_script(5000)),
    )
}


@dataclass(frozen=True)
class Case:
    workload: Workload
    pool_mode: str
    clients: int

    @property
    def case_id(self) -> str:
        mode = "tx" if self.pool_mode == "transaction" else "session"
        return f"{self.workload.name}-{mode}-c{self.clients}"

    def grid(self, grid: Sequence[int]) -> tuple[int, ...]:
        """``grid`` up to twice the clients (larger pools cannot be used, the plateau is
        measured by then), always with the default size."""
        limit = max(DEFAULT_SIZE, 2 * self.clients)
        return tuple(v for v in grid if v <= limit or v == DEFAULT_SIZE)


#: (workload, pool mode, client counts): 33 cases from 8 to 512 clients.
PLAN: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    ("select_only", "transaction", (8, 64, 512)),
    ("tpcb_like", "transaction", (8, 32, 128)),
    ("sleep_1ms", "transaction", (16, 128, 512)),
    ("sleep_5ms", "transaction", (16, 64, 256)),
    ("sleep_20ms", "transaction", (32, 128, 512)),
    ("hot_rows", "transaction", (16, 128, 512)),
    ("scan", "transaction", (8, 64, 256)),
    ("select_only", "session", (8, 64)),
    ("tpcb_like", "session", (16, 128)),
    ("sleep_1ms", "session", (32,)),
    ("sleep_5ms", "session", (16, 128)),
    ("sleep_20ms", "session", (64, 512)),
    ("hot_rows", "session", (64,)),
    ("scan", "session", (16, 128)),
)


def full_cases() -> list[Case]:
    return [
        Case(WORKLOADS[name], mode, clients) for name, mode, counts in PLAN for clients in counts
    ]


#: A quick run's cases: one CPU-bound and one off-CPU workload, one per pool mode.
QUICK_CASES = (("select_only", "transaction", 16), ("sleep_5ms", "session", 16))


def select_cases(
    *,
    quick: bool,
    workloads: Sequence[str] = (),
    modes: Sequence[str] = (),
    clients: Sequence[int] = (),
) -> list[Case]:
    """The cases to run: the full plan or the quick pair, narrowed to ``workloads``,
    ``modes`` and ``clients`` when given. Unknown names are a ValueError."""
    unknown = sorted(set(workloads) - set(WORKLOADS)) + sorted(set(modes) - set(POOL_MODES))
    if unknown:
        raise ValueError(
            f"unknown {unknown}; workloads: {', '.join(WORKLOADS)}; modes: {', '.join(POOL_MODES)}"
        )
    if quick:
        cases = [Case(WORKLOADS[name], mode, count) for name, mode, count in QUICK_CASES]
    else:
        cases = full_cases()
    return [
        case
        for case in cases
        if (not workloads or case.workload.name in workloads)
        and (not modes or case.pool_mode in modes)
        and (not clients or case.clients in clients)
    ]


@dataclass(frozen=True)
class Timing:
    dwell_s: float
    sample_period_s: float
    discard_samples: int
    repeats: int
    baseline_s: float
    warmup_s: float
    size_grid: tuple[int, ...]

    def case_seconds(self, case: Case) -> float:
        per_visit = self.dwell_s + 0.5
        grid = case.grid(self.size_grid)
        return self.warmup_s + self.baseline_s + per_visit * len(grid) * self.repeats + 3.0


FULL_TIMING = Timing(
    dwell_s=6.0,
    sample_period_s=1.0,
    discard_samples=2,
    repeats=3,
    baseline_s=6.0,
    warmup_s=5.0,
    size_grid=SIZE_GRID,
)
QUICK_TIMING = Timing(
    dwell_s=3.0,
    sample_period_s=1.0,
    discard_samples=1,
    repeats=1,
    baseline_s=3.0,
    warmup_s=2.0,
    size_grid=(2, 8, 20),
)
