"""The catalog of ``mariadb-<cores>core-v4``: v2's cases measured by paired sweeps of short
visits — the engine default pool size visited before and after every other size, each visit
2 s long with its first second dropped, the grid visited 20 times — so each size is read as a
ratio to the default measured seconds beside it, whatever the server's level did meanwhile.

Why: on this host the server's level moves on a scale of 2 to 20 seconds whatever the pool
size (``python -m scripts.sweep_noise``), so v2's 5-s visits and v3's 10-s visits read that
movement as the curve. Paired 2-s visits were within 0.02 of the best of six designs on every
load measured, and need about 12 minutes a case for a label noise of 0.025, the noise that
tells a 5% difference (docs/datasets.md, "What a sweep can resolve"). The secondary-knob
sweeps stay v2's; v4 measures the pool size only. A few loads queue so deeply that a pool
size's state outlasts the dropped second (:data:`SETTLED`): they drop 3 s after each change.

The cases come one client count of every workload first (the 64-client case where there is
one), so that a chunk of the measurement already spreads over the workloads that a
leave-one-workload-out evaluation needs; then the rest.
"""

from __future__ import annotations

from dataclasses import replace

from scripts.mariadb_dataset import catalog_v2
from scripts.mariadb_dataset.cases import FULL_TIMING, Case

#: Paired 2-s visits (one 1-s sample kept of each), the grid visited 20 times.
PAIRED_TIMING = replace(FULL_TIMING, dwell_s=2.0, discard_samples=1, repeats=20, paired=True)


#: Cases whose queue carried a pool size's state into the next 2-s visit: the paired check
#: flagged them, and read again with 3 s dropped after each change they agreed with v1 and
#: v2's longer visits (docs/datasets.md, "A longer discard where the queue carries over").
SETTLED = {
    "io_bound_read_write-c64": 3.0,
    "io_bound_read_write-c256": 3.0,
    "stall_mix_cpu-c256": 3.0,
}


def _first_clients(counts: list[int]) -> int:
    return 64 if 64 in counts else counts[len(counts) // 2]


def cases() -> list[Case]:
    """v2's cases without the secondary sweeps (:data:`SETTLED` with a longer discard): one
    per workload first, then the rest."""
    every = [
        replace(c, secondary=False, settle_s=SETTLED.get(c.workload_id, 0.0))
        for c in catalog_v2.cases()
    ]
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
    summary=(
        "v2's cases, pool size only: OLTP mixes at 4–256 clients, CPU-heavy statements, "
        "hot-row and secondary-index contention, server-side waits of 1, 10 and 50 ms, long "
        "statements among short ones, fsync-bound commits, read IO through a small buffer "
        "pool, mixed and phased loads, and the server pinned to one core. Paired sweeps: "
        "each pool size's visit sits between visits of the engine default, and is read as "
        "a ratio to them."
    ),
)
