"""What ``pooltune-trainer bootstrap`` learns from: the bundled datasets of each engine.

MariaDB learns from the calibrated simulated corpus (``sim-v2``) and the real sweeps,
PgBouncer from its measured dataset when the repository has it; an engine without one keeps
the service's heuristic. A real dataset holds few workload groups, so its engine trains with
that many as the minimum (at least :data:`MIN_REAL_GROUPS`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agents.knobs import Engine
from service.recommendations.intervals import SIMULATED
from trainer.examples import dataset_domain
from trainer.sources import datasets

#: The bundled datasets each engine's bootstrap learns from (those not there are skipped).
BOOTSTRAP_DATASETS: Mapping[Engine, tuple[str, ...]] = {
    Engine.MARIADB: ("sim-v2", "mariadb-2core-v1", "mariadb-2core-v2", "mariadb-2core-v4"),
    Engine.PGBOUNCER: ("pgbouncer-2core-v1",),
}
#: The fewest workload groups a dataset must have for bootstrap to train on it.
MIN_REAL_GROUPS = 5


def bootstrap_plan(
    engine: Engine | None, named: Sequence[str] | None
) -> tuple[dict[Engine, tuple[str, ...]], list[str]]:
    """The (engine → datasets) to bootstrap and what to say about the engines left out.
    With ``named`` datasets, those for ``engine`` (default: the engine the first one's
    workloads are of); else each engine's (or ``engine``'s) bundled datasets that exist.
    Raises :class:`~trainer.sources.datasets.DatasetError` for a named one that cannot load."""
    if named:
        first = datasets.load_dataset(named[0]).workloads["engine"].iloc[0]
        return {engine or Engine(first): tuple(named)}, []
    plan: dict[Engine, tuple[str, ...]] = {}
    notes: list[str] = []
    for candidate in [engine] if engine is not None else list(BOOTSTRAP_DATASETS):
        present = tuple(n for n in BOOTSTRAP_DATASETS.get(candidate, ()) if datasets.bundled(n))
        if not present:
            notes.append(
                f"{candidate.value}: no bundled dataset; the service answers from its heuristic"
            )
            continue
        plan[candidate] = present
    return plan, notes


def bundled_by_domain(engine: Engine) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``engine``'s bootstrap datasets as (simulated corpora, real sweeps), for whatever must
    learn as ``make run`` does (the live benchmarks' warm service)."""
    names = BOOTSTRAP_DATASETS.get(engine, ())
    simulated = tuple(name for name in names if dataset_domain(name) == SIMULATED)
    return simulated, tuple(name for name in names if name not in simulated)


def workload_groups(dataset: str) -> int:
    """How many workload groups ``dataset`` has."""
    return int(datasets.load_dataset(dataset).workloads["group"].nunique())
