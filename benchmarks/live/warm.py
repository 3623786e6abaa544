"""The warm agent's service: the real service on a fresh PostgreSQL database with a model the
real trainer CLI promoted, trained without any case of the benchmark's workload."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agents.knobs import Engine
from benchmarks.live.cases import DATASET_GROUPS
from trainer.bootstrap import bundled_by_domain

if TYPE_CHECKING:
    from benchmarks.fleet import LiveService

#: How many workloads of each simulated corpus ``make run``'s bootstrap learns from
#: (:func:`trainer.bootstrap.bundled_by_domain`) the warm model takes.
WARM_SIM_WORKLOADS = 3000


@dataclass(frozen=True)
class WarmService:
    """A running pooltune service the warm agent enrols with and asks for its start."""

    url: str
    enrollment_token: str
    #: What the promoted model learned from (printed with the results).
    description: str
    #: The agent token of each host enrolled, by ``engine:hostname`` (every run on a host
    #: after the first uses it).
    agent_tokens: dict[str, str] = field(default_factory=dict)


@contextlib.contextmanager
def warm_service(
    workload: str,
    *,
    real_dataset: str,
    sim_workloads: int,
    trials: int,
    work_dir: Path,
    agents: int = 1,
    engine: Engine = Engine.MARIADB,
) -> Iterator[WarmService]:
    """The real service on a fresh PostgreSQL database, with a model of ``engine`` promoted
    by the real trainer CLI from what ``make run`` bundles (``sim_workloads`` of each of
    ``engine``'s simulated corpora, if it has any) plus the real datasets
    of ``real_dataset`` (comma-separated) without any case of ``workload``'s group
    (:data:`DATASET_GROUPS`, else the workload's own name): the warm agent's host is one
    the model has never seen."""
    from benchmarks import fleet

    held = DATASET_GROUPS.get(workload, workload)
    names = [name for name in real_dataset.split(",") if name]
    with fleet.live_service(log_path=work_dir / "service.log") as service:
        simulated = bundled_by_domain(engine)[0] if sim_workloads else ()
        for corpus in simulated:
            fleet.import_dataset(service, corpus, limit=sim_workloads)
        kept = sum(_import_without(service, name, held=held, work_dir=work_dir) for name in names)
        training = fleet.train_and_promote(
            service,
            trials=trials,
            seed=0,
            card_dir=work_dir / "cards",
            name="warm-live",
            engine=engine,
        )
        promoted = "promoted" if training.promoted else "NOT promoted (the service's heuristic)"
        description = (
            f"model from {sim_workloads if simulated else 0} {'+'.join(simulated) or 'simulated'} "
            f"workloads + {kept} cases of "
            f"{' + '.join(names)} without {held} ({trials} trials, {training.seconds:.0f} s): "
            f"{promoted}"
        )
        print(f"# warm service: {description}", flush=True)
        yield WarmService(
            url=service.url,
            enrollment_token=service.enrollment_token(uses=agents, description="live benchmark"),
            description=description,
        )


def _import_without(service: LiveService, name: str, *, held: str, work_dir: Path) -> int:
    """Import real dataset ``name`` into ``service`` without the cases of group ``held``;
    how many cases were imported."""
    from benchmarks import fleet
    from trainer.sources import datasets

    real = datasets.load_dataset(name)
    kept = real.workloads[real.workloads["group"] != held]
    held_out = work_dir / f"{name}-without-{held}"
    datasets.write_dataset(
        held_out,
        name=held_out.name,
        workloads=kept,
        curves=real.curves[real.curves["workload_id"].isin(set(kept["workload_id"]))],
        command=f"{name} without the {held} cases (benchmarks/live --warm)",
        description={"source": name, "held_out_group": held},
    )
    fleet.import_dataset(service, str(held_out))
    return len(kept)
