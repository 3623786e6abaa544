"""Whether a paired sweep's reference held beside every size: the carry-over check.

    python -m scripts.paired_check DIR [WORKLOAD_ID ...]

``DIR`` holds stored cases (``<dir>/<workload_id>/case.json``, as
``scripts.make_mariadb_dataset`` writes them under ``cases/``); without ids, every paired
case in it. Per case: each size's paired ratio to the default next to its plain ratio (its
own samples over the default's), and the default's level right after and right before that
size's visits (:func:`agents.sweep.curve.reference_beside`). A case whose paired and plain
ratios differ by more than :data:`DISTURBED_GAP` at some size is marked DISTURBED: its
paired reading divides by a reference that the size's visits disturbed
(docs/datasets.md, "Paired 2-s visits carry a large pool's state into the default beside
it").
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agents.sweep.curve import SweepResult, reference_beside
from scripts.compare_cases import size_ratios
from scripts.mariadb_dataset.cases import SIZE
from scripts.mariadb_dataset.records import RECORD_FILE, RecordError, read_record

#: Paired and plain ratios this far apart (a factor) at one size: the reference was
#: disturbed. The plain ratio carries the server's drift, which on v4's clean cases moved
#: it by at most about 1.2×.
DISTURBED_GAP = 1.35


@dataclass(frozen=True)
class Check:
    """One paired case: per size, paired and plain ratios to the default and the default's
    level after and before the size's visits."""

    paired: dict[int, float]
    plain: dict[int, float]
    beside: dict[int, tuple[float, float]]

    @property
    def gap(self) -> float:
        """The largest factor between a size's paired and plain ratios."""
        logs = [
            abs(math.log(self.paired[v] / self.plain[v]))
            for v in self.paired
            if self.paired[v] > 0 < self.plain.get(v, 0)
        ]
        return math.exp(max(logs)) if logs else math.nan

    @property
    def disturbed(self) -> bool:
        return self.gap > DISTURBED_GAP


def check(sweep: SweepResult) -> Check:
    """The carry-over check of a paired sweep (ValueError if it is not paired)."""
    reference = sweep.plan.reference
    if reference is None:
        raise ValueError("not a paired sweep")
    kept = [s for s in sweep.samples if not s.discarded]
    return Check(
        paired=size_ratios(sweep),
        plain=size_ratios(sweep, paired=False),
        beside=reference_beside(kept, reference),
    )


def flag(sweep: SweepResult) -> str | None:
    """The check's verdict on a sweep as one line, for the builder to print as each case is
    measured (None for a plain sweep)."""
    if sweep.plan.reference is None:
        return None
    try:
        result = check(sweep)
    except ValueError as exc:  # the default lost every sample: nothing to pair with
        return f"paired check: not checked ({exc})"
    if not result.disturbed:
        return f"paired check: ok (paired / plain within {result.gap:.2f}×)"
    return (
        f"paired check: DISTURBED (paired / plain differ by up to {result.gap:.2f}×): the "
        "reference sank beside some size; see python -m scripts.paired_check"
    )


def report(case: str, result: Check) -> list[str]:
    sizes = sorted(result.paired)

    def row(values: dict[int, float]) -> str:
        return " ".join(f"{values[s]:6.2f}" if s in values else "     -" for s in sizes)

    after = {v: a for v, (a, _) in result.beside.items()}
    before = {v: b for v, (_, b) in result.beside.items()}
    verdict = "DISTURBED" if result.disturbed else "ok"
    return [
        f"{case}: {verdict} (paired / plain differ by up to {result.gap:.2f}×)",
        f"  size          {' '.join(f'{s:>6}' for s in sizes)}",
        f"  paired        {row(result.paired)}",
        f"  plain         {row(result.plain)}",
        f"  default after {row(after)}",
        f"  default before{row(before)}",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scripts.paired_check",
        description="Whether each paired case's reference held beside every size: paired "
        "and plain ratios side by side, and the default's level after and before each size.",
    )
    parser.add_argument("cases_dir", type=Path, help="folder of stored cases")
    parser.add_argument("cases", nargs="*", help="workload ids (default: every case there)")
    args = parser.parse_args(argv)
    cases = args.cases or sorted(p.parent.name for p in args.cases_dir.glob(f"*/{RECORD_FILE}"))
    if not cases:
        parser.error(f"no stored case in {args.cases_dir}")
    disturbed = checked = 0
    for case in cases:
        try:
            result = check(read_record(args.cases_dir / case / RECORD_FILE).sweeps[SIZE])
        except (RecordError, ValueError, KeyError) as exc:
            sys.stderr.write(f"{case}: not checked ({exc})\n")
            continue
        checked += 1
        disturbed += result.disturbed
        sys.stdout.write("\n".join(report(case, result)) + "\n")
    sys.stdout.write(f"{disturbed} of {checked} paired cases disturbed\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
