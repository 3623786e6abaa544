"""How fast a real server's throughput moves, and which sweep design reads a curve best in it.

    python -m scripts.sweep_noise [--workloads oltp_point_select-c64,wait_1ms-c16,...]
                                     [--seconds 240] [--save holds.json] [--from holds.json]

Live, each workload of the MariaDB dataset's v2 catalog runs under sysbench on a lab server
while the pool size is held at the engine default for ``--seconds`` without a single change:
every 1-s sample is kept. Whatever such a series does, no pool size did it. Printed per
workload:

- the spread of its 1-s samples and how much of it is new after a lag (the semivariance at 1,
  2, 5, 10 and 20 s over the variance): near 0 at a lag means the level holds that long, near
  1 that it has moved as far as it ever does;
- the label noise of sweep designs laid over the series, as if it were a sweep of nine pool
  sizes on a flat curve: the spread of log(size / default) over the sizes and many start
  offsets, at the time v2 spends on a case (135 s), and the time a case would need for a
  label noise of 0.025 (telling a 5% difference at two standard errors). Designs: v2's
  (5-s visits, 2 samples dropped, 3 passes), shorter visits and more passes, and paired
  sweeps (the default before and after every other visit, ``--reference``) of each visit
  length.

See docs/datasets.md, "What a sweep can resolve".
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from agents.sweep import SweepPlan
from agents.sweep.curve import SweepSample, curve_points

#: The grid a design is laid over: nine sizes, the default among them (v2's grid).
GRID = (1, 2, 3, 4, 6, 8, 16, 32, 64)
DEFAULT = 2
#: Seconds a v2 case spends on its pool-size sweep (9 sizes × 3 visits × 5 s).
BUDGET_S = 135.0
#: The label noise that tells a 5% difference at two standard errors of a difference.
TARGET_NOISE = 0.025
LAGS_S = (1, 2, 5, 10, 20)
DEFAULT_WORKLOADS = ("oltp_point_select-c64", "wait_1ms-c16", "hot_rows-c64", "oltp_read_write-c16")


@dataclass(frozen=True)
class Design:
    """A sweep design over 1-s samples: visits of ``dwell`` samples, the first ``discard``
    dropped; paired puts the default before and after every other visit. The visit order
    and the reading are the sweep's own (:class:`SweepPlan`, :func:`curve_points`)."""

    name: str
    dwell: int
    discard: int
    paired: bool = False

    def plan(self, passes: int) -> SweepPlan:
        return SweepPlan(
            knob="thread_pool_size",
            values=GRID,
            dwell_s=float(self.dwell),
            repeats=passes,
            sample_period_s=1.0,
            discard_samples=self.discard,
            reference=DEFAULT if self.paired else None,
        )

    def seconds(self, passes: int) -> int:
        return round(self.plan(passes).expected_duration_s)

    def passes_within(self, budget_s: float) -> int:
        return max(1, int(budget_s // self.seconds(1)))

    def estimates(self, series: np.ndarray, passes: int, start: int) -> list[float]:
        """log(size / default) as the sweep reads it, for every other size, the design laid
        over ``series`` from ``start`` (every size is the same server: the truth is 0)."""
        plan = self.plan(passes)
        samples = [
            SweepSample(
                value=value,
                repeat=repeat,
                index=index,
                t_s=float(at + 1),
                duration_s=1.0,
                throughput=float(series[at]),
                latency_ms=None,
                discarded=index < self.discard,
                visit=visit,
            )
            for visit, (repeat, value) in enumerate(plan.visits)
            for index, at in enumerate(
                range(start + visit * self.dwell, start + (visit + 1) * self.dwell)
            )
        ]
        points = {p.value: p for p in curve_points(GRID, samples, reference=plan.reference)}
        default = points[DEFAULT].mean
        return [math.log(p.mean / default) for v, p in points.items() if v != DEFAULT]


DESIGNS = (
    Design("v2: 5-s visits, 2 dropped", 5, 2),
    Design("3-s visits, 1 dropped", 3, 1),
    Design("2-s visits, 1 dropped", 2, 1),
    Design("paired 5-s visits", 5, 2, paired=True),
    Design("paired 3-s visits", 3, 1, paired=True),
    Design("paired 2-s visits", 2, 1, paired=True),
)


@dataclass(frozen=True)
class DesignNoise:
    design: Design
    #: The spread of the estimates at ``BUDGET_S`` (scaled from the whole passes that fit).
    noise: float
    #: Seconds per case for a label noise of ``TARGET_NOISE`` (noise falls as 1/√time).
    seconds_for_target: float


def design_noise(
    series: ArrayLike, design: Design, budget_s: float = BUDGET_S, step: int = 3
) -> DesignNoise:
    """The label noise of ``design`` over ``series`` (1-s samples of one unchanged server):
    the spread of its estimates over every start offset ``step`` apart."""
    values = np.asarray(series, dtype=float)
    passes = design.passes_within(budget_s)
    length = design.seconds(passes)
    if length > values.size:
        raise ValueError(f"{design.name} needs {length} samples, the series has {values.size}")
    errors: list[float] = []
    for start in range(0, values.size - length + 1, step):
        errors += design.estimates(values, passes, start)
    noise = float(np.sqrt(np.mean(np.square(errors)))) * math.sqrt(length / budget_s)
    return DesignNoise(design, noise, budget_s * (noise / TARGET_NOISE) ** 2)


def semivariance_share(series: ArrayLike, lags: Sequence[int] = LAGS_S) -> list[float]:
    """Per lag (samples), the semivariance of the log series over its variance: how much of
    the level's spread is new after that lag (0: it held, 1: it moved as far as ever)."""
    logs = np.log(np.asarray(series, dtype=float))
    variance = float(logs.var())
    return [
        float(np.mean(np.square(logs[lag:] - logs[:-lag])) / 2 / variance) if variance else 0.0
        for lag in lags
    ]


def report(name: str, series: ArrayLike, other_cpu: float | None) -> str:
    values = np.asarray(series, dtype=float)
    shares = semivariance_share(values)
    lines = [
        f"{name}: {values.size} s held, 1-s sample spread {np.log(values).std():.3f} (log), "
        f"other processes {'?' if other_cpu is None else f'{other_cpu:.2f}'} cores",
        "  new after a lag of "
        + ", ".join(f"{lag} s: {share:.2f}" for lag, share in zip(LAGS_S, shares, strict=True)),
        f"  {'design':28} {'noise at 135 s':>15} {'s per case for 0.025':>21}",
    ]
    for design in DESIGNS:
        found = design_noise(values, design)
        lines.append(f"  {design.name:28} {found.noise:15.3f} {found.seconds_for_target:21.0f}")
    return "\n".join(lines)


def hold(workloads: Sequence[str], seconds: float) -> dict[str, dict[str, object]]:
    """Hold the default pool size under each workload on a lab MariaDB; the 1-s samples."""
    from agents.sweep import Sweeper
    from lab.sysbench import LOCK_ERRORS, SysbenchLoad
    from scripts.mariadb_dataset import catalog_v2
    from scripts.mariadb_dataset.cases import paired_reference
    from scripts.mariadb_dataset.measure import DatasetServer, start_server

    servers: dict[str, DatasetServer] = {}
    found: dict[str, dict[str, object]] = {}
    work = Path(tempfile.mkdtemp(prefix="pooltune-sweep-noise-"))
    try:
        for spec in workloads:
            name, _, clients = spec.rpartition("-c")
            workload = catalog_v2.WORKLOADS[name]
            if workload.server not in servers:
                servers[workload.server] = start_server(workload.server, work)
            server = servers[workload.server]
            load = SysbenchLoad(
                server.server,
                database=workload.database,
                tables=workload.tables,
                table_size=workload.table_size,
            )
            load.prepare(workload.test)
            with load.running(
                workload.test,
                threads=int(clients),
                time_s=int(seconds) + 120,
                extra_args=workload.extra_args,
                ignore_errors=LOCK_ERRORS,
                log_path=work / f"{spec}.log",
            ) as process:
                threading.Event().wait(5.0)
                plan = SweepPlan(
                    knob="thread_pool_size",
                    values=(paired_reference(),),
                    dwell_s=seconds,
                    repeats=1,
                    sample_period_s=1.0,
                    discard_samples=1,
                    metric=workload.metric,
                    load_pids=(process.pid,),
                )
                result = Sweeper(
                    target=server.target, plan=plan, state=server.state, stop=threading.Event()
                ).run()
            kept = [s.throughput for s in result.samples if not s.discarded]
            found[spec] = {"samples": kept, "other_cpu": result.other_cpu}
            sys.stdout.write(report(spec, kept, result.other_cpu) + "\n")
            sys.stdout.flush()
    finally:
        for server in servers.values():
            server.close()
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workloads",
        default=",".join(DEFAULT_WORKLOADS),
        help="comma list of <v2 workload>-c<clients> (default: %(default)s)",
    )
    parser.add_argument("--seconds", type=float, default=240.0, help="seconds held per workload")
    parser.add_argument("--save", type=Path, help="write the held series to this JSON")
    parser.add_argument("--from", dest="source", type=Path, help="report on a saved JSON")
    args = parser.parse_args(argv)
    if args.source is not None:
        held = json.loads(args.source.read_text())
        for spec, data in held.items():
            sys.stdout.write(report(spec, data["samples"], data.get("other_cpu")) + "\n")
        return 0
    held = hold([w for w in args.workloads.split(",") if w], args.seconds)
    if args.save is not None:
        args.save.write_text(json.dumps(held))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
