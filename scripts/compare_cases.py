"""The same dataset cases measured twice (another machine, another day), side by side.

    python -m scripts.compare_cases DIR_A DIR_B [WORKLOAD_ID ...]

``DIR_A`` and ``DIR_B`` hold stored cases (``<dir>/<workload_id>/case.json``, as
``scripts.make_mariadb_dataset`` writes them under ``cases/``); without ids, every case found
in both. Per case: each pool size as a ratio to the engine default (a paired sweep read side
by side with its reference, :func:`agents.sweep.curve.curve_points`), each measurement's
label noise (half the spread over the sizes of log(odd passes / even passes)), the best size
of each, and what each best costs on the other's curve. It tells whether a case's label
belongs to its workload or to the machine it was measured on (docs/datasets.md, "v4 on a
second machine").
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agents.sweep.curve import SweepResult, curve_points
from scripts.mariadb_dataset.cases import SIZE
from scripts.mariadb_dataset.records import RECORD_FILE, RecordError, read_record


@dataclass(frozen=True)
class Reading:
    """One measurement of a case's pool-size curve, as ratios to the engine default."""

    machine: str
    ratios: dict[int, float]
    noise: float

    @property
    def best(self) -> int:
        return max(self.ratios, key=self.ratios.__getitem__)

    def regret_of(self, size: int) -> float:
        """1 − throughput at ``size`` / at this reading's best (NaN if not measured)."""
        if size not in self.ratios:
            return math.nan
        return 1.0 - self.ratios[size] / self.ratios[self.best]


def size_ratios(
    sweep: SweepResult, parity: int | None = None, *, paired: bool = True
) -> dict[int, float]:
    """Mean throughput per size over the default's (the plan's reference, else the
    original size), from every pass or only the passes of one ``parity``; a paired sweep
    read side by side with its reference unless ``paired`` is False (each size's own
    samples over the default's)."""
    samples = [s for s in sweep.samples if parity is None or s.repeat % 2 == parity]
    reference = sweep.plan.reference if paired else None
    points = curve_points(sweep.plan.values, samples, reference=reference)
    means = {p.value: statistics.fmean(p.samples) for p in points if p.samples}
    default = sweep.plan.reference or sweep.original_tuple.get(SIZE)
    if default not in means or means[default] <= 0:
        raise ValueError(f"the default size {default} was not measured")
    return {value: mean / means[default] for value, mean in means.items()}


def reading(path: Path) -> Reading:
    """The pool-size curve of the case stored in ``path`` (a ``case.json``)."""
    record = read_record(path)
    sweep = record.sweeps[SIZE]
    ratios = size_ratios(sweep)
    noise = math.nan
    if sweep.plan.repeats >= 2:
        odd, even = size_ratios(sweep, 1), size_ratios(sweep, 0)
        logs = [math.log(odd[v] / even[v]) for v in ratios if odd.get(v, 0) > 0 < even.get(v, 0)]
        noise = statistics.pstdev(logs) / 2 if len(logs) >= 2 else math.nan
    return Reading(machine=str(record.host.get("cpu_model", "?")), ratios=ratios, noise=noise)


def report(case: str, a: Reading, b: Reading) -> list[str]:
    sizes = sorted(a.ratios.keys() | b.ratios.keys())

    def row(r: Reading) -> str:
        return " ".join(f"{r.ratios[s]:5.2f}" if s in r.ratios else "    -" for s in sizes)

    return [
        f"{case}",
        f"  size     {' '.join(f'{s:>5}' for s in sizes)}",
        f"  A        {row(a)}   noise {a.noise:.3f}  ({a.machine})",
        f"  B        {row(b)}   noise {b.noise:.3f}  ({b.machine})",
        f"  best: A {a.best} ({a.ratios[a.best]:.2f}× the default), B {b.best} "
        f"({b.ratios[b.best]:.2f}×); A's best regrets {b.regret_of(a.best):.3f} on B, "
        f"B's best {a.regret_of(b.best):.3f} on A",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.compare_cases",
        description="The same dataset cases measured twice, side by side: each pool size "
        "over the default, each reading's noise, each best and its cost on the other.",
    )
    parser.add_argument("a", type=Path, help="folder of stored cases (A)")
    parser.add_argument("b", type=Path, help="folder of stored cases (B)")
    parser.add_argument("cases", nargs="*", help="workload ids (default: every case in both)")
    args = parser.parse_args(argv)
    found = {
        p.parent.name for p in args.a.glob(f"*/{RECORD_FILE}") if (args.b / p.parent.name).is_dir()
    }
    cases = args.cases or sorted(found)
    if not cases:
        parser.error(f"no case is stored in both {args.a} and {args.b}")
    for case in cases:
        try:
            a = reading(args.a / case / RECORD_FILE)
            b = reading(args.b / case / RECORD_FILE)
        except (RecordError, ValueError, KeyError) as exc:
            sys.stderr.write(f"{case}: cannot compare ({exc})\n")
            return 2
        sys.stdout.write("\n".join(report(case, a, b)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
