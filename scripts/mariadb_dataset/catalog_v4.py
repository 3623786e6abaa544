"""The catalog of ``mariadb-<cores>core-v4``: v2's cases measured by paired sweeps — the
engine default pool size visited before and after every other size, so each size is read
as a ratio to the default measured beside it, whatever the server's level did meanwhile.

Why: in most v2 and v3 sweeps one size measured at different times differed by more than
the whole curve (docs/trainer.md, "What a real sweep resolves"), and longer visits (v3) did
not help: the server's level moves between visits. A ratio to a reference measured seconds
before and after cancels what moves slower than a visit (docs/datasets.md, "Paired
sweeps"). The secondary-knob sweeps stay v2's; v4 measures the pool size only.

The cases come one client count of every workload first (the 64-client case where there is
one), so that a chunk of the measurement already spreads over the workloads that a
leave-one-workload-out evaluation needs; then the rest.
"""

from __future__ import annotations

from dataclasses import replace

from scripts.mariadb_dataset import catalog_v2
from scripts.mariadb_dataset.cases import FULL_TIMING, Case

#: v2's timing, the pool-size sweep paired with the engine default.
PAIRED_TIMING = replace(FULL_TIMING, paired=True)


def _first_clients(counts: list[int]) -> int:
    return 64 if 64 in counts else counts[len(counts) // 2]


def cases() -> list[Case]:
    """v2's cases without the secondary sweeps: one per workload first, then the rest."""
    every = [replace(c, secondary=False) for c in catalog_v2.cases()]
    counts: dict[str, list[int]] = {}
    for case in every:
        counts.setdefault(case.workload.name, []).append(case.clients)
    first = [c for c in every if c.clients == _first_clients(counts[c.workload.name])]
    return first + [c for c in every if c not in first]


def quick_cases() -> list[Case]:
    """A read-only case and a waiting one (a smoke run)."""
    by_id = {c.workload_id: c for c in cases()}
    return [by_id["oltp_read_only-c16"], by_id["wait_10ms-c16"]]


CATALOG = replace(
    catalog_v2.CATALOG,
    version="v4",
    cases=cases,
    quick_cases=quick_cases,
    timing=PAIRED_TIMING,
    summary=catalog_v2.CATALOG.summary
    + " The same cases as v2 (without the secondary sweeps), each pool size measured side"
    " by side with the engine default: paired sweeps.",
)
