"""Training examples and the split that keeps every workload on one side.

An example is one workload: the host, the profile the agent measured, the best tuple found,
and, where known, the curve (throughput per pool size) that lets us score any other prediction.
A workload group (a host, or a dataset's workload id) is never split between training and
evaluation: profiles of the same workload are near-duplicates and would flatter the model.
Every example is real (an agent's report, a measured dataset) or simulated (a ``sim-*``
dataset): the two are weighted and evaluated apart (docs/trainer.md, "Real and simulated").
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from agents.knobs import POOL_SIZE_KNOB, Engine
from agents.wire import HostFacts, WorkloadProfile
from service.recommendations.intervals import REAL, SIMULATED
from trainer.regret import Curve

#: Datasets whose names start with this are simulated; every other source is real.
SIMULATED_DATASET_PREFIX = "sim-"


def dataset_domain(name: str) -> str:
    """``simulated`` for a simulator's dataset (``sim-v1``, ``sim-v2``…), else ``real``."""
    return SIMULATED if name.startswith(SIMULATED_DATASET_PREFIX) else REAL


@dataclass(frozen=True, slots=True)
class Example:
    group: str
    host: HostFacts
    profile: WorkloadProfile
    optimal_tuple: dict[str, int]
    curve: Curve | None = None
    #: Where the example came from ("report:<id>", "dataset:sim-v1:<workload>").
    origin: str = ""
    extras: dict[str, float] = field(default_factory=dict)
    #: ``real`` or ``simulated`` (:func:`dataset_domain`).
    domain: str = SIMULATED
    #: Curves of the other tuned knobs (throughput per value, the pool size held), by knob.
    knob_curves: dict[str, Curve] = field(default_factory=dict)

    @property
    def engine(self) -> Engine:
        return self.host.engine

    @property
    def optimal_size(self) -> int:
        return self.optimal_tuple[POOL_SIZE_KNOB[self.engine]]

    @property
    def is_real(self) -> bool:
        return self.domain == REAL


def _bucket(group: str, seed: int) -> float:
    """A stable pseudo-random number in [0, 1) per (group, seed): the same split every run."""
    digest = hashlib.sha256(f"{seed}:{group}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_by_group(
    examples: Sequence[Example], *, test_fraction: float, seed: int
) -> tuple[list[Example], list[Example]]:
    """Train / evaluation split by workload group; deterministic in ``seed``. With two
    groups or more neither side is left empty (a real dataset has a few groups only): the
    group nearest the threshold crosses over."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be between 0 and 1, got {test_fraction}")
    buckets = {example.group: _bucket(example.group, seed) for example in examples}
    held = {group for group, bucket in buckets.items() if bucket < test_fraction}
    if len(buckets) >= 2 and not held:
        held = {min(buckets, key=buckets.__getitem__)}
    elif len(buckets) >= 2 and len(held) == len(buckets):
        held.discard(max(buckets, key=buckets.__getitem__))
    train = [example for example in examples if example.group not in held]
    test = [example for example in examples if example.group in held]
    return train, test


def holdout_split(
    examples: Sequence[Example], *, test_fraction: float, seed: int
) -> tuple[list[Example], list[Example]]:
    """The split every score is made on: simulated workload groups split as
    :func:`split_by_group` does; real ones all train, as they are few and scored by
    cross-validation instead (:mod:`trainer.crossval`)."""
    real = [e for e in examples if e.is_real]
    simulated = [e for e in examples if not e.is_real]
    train, test = (
        split_by_group(simulated, test_fraction=test_fraction, seed=seed) if simulated else ([], [])
    )
    return train + real, test


def groups(examples: Iterable[Example]) -> set[str]:
    return {example.group for example in examples}


#: How sim-v2 names the workloads it drew around a real workload group (docs/simulator.md).
CALIBRATED_PREFIX = "calibrated:"


def workload_of(group: str) -> str:
    """The workload a group measures, whichever dataset holds it: ``<dataset>:<workload>``
    and a simulated ``<dataset>:calibrated:<workload>`` (drawn around the real curve) both
    give ``<workload>``. Holding a workload out must hold all of them out."""
    return group.split(":", 1)[-1].removeprefix(CALIBRATED_PREFIX)


#: Profile fields an agent may not be able to measure on a given server (the synchronisation
#: time needs performance_schema's wait/synch instruments, off by default on MariaDB).
OPTIONAL_MEASUREMENTS: tuple[str, ...] = ("sync_ms_per_request",)


def with_some_unmeasured(
    examples: Sequence[Example], *, share: float = 0.25, seed: int = 0
) -> list[Example]:
    """``examples`` with the optional measurements made unknown in a stable ``share`` of the
    workload groups that have them, so a model learns where to send a host that cannot take
    them (docs/trainer.md, "Examples")."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be between 0 and 1, got {share}")
    unknown = dict.fromkeys(OPTIONAL_MEASUREMENTS)
    out: list[Example] = []
    for example in examples:
        measured = any(getattr(example.profile, name) is not None for name in unknown)
        if measured and _bucket(example.group, seed + 104_729) < share:
            example = replace(example, profile=example.profile.model_copy(update=unknown))
        out.append(example)
    return out
