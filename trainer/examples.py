"""Training examples and the split that keeps every workload on one side.

An example is one workload: the host, the profile the agent measured, the best tuple found,
and, where known, the curve (throughput per pool size) that lets us score any other prediction.
A workload group (a host, or a dataset's workload id) is never split between training and
evaluation: profiles of the same workload are near-duplicates and would flatter the model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from agents.knobs import POOL_SIZE_KNOB, Engine
from agents.wire import HostFacts, WorkloadProfile
from trainer.regret import Curve


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

    @property
    def engine(self) -> Engine:
        return self.host.engine

    @property
    def optimal_size(self) -> int:
        return self.optimal_tuple[POOL_SIZE_KNOB[self.engine]]


def _bucket(group: str, seed: int) -> float:
    """A stable pseudo-random number in [0, 1) per (group, seed): the same split every run."""
    digest = hashlib.sha256(f"{seed}:{group}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_by_group(
    examples: Sequence[Example], *, test_fraction: float, seed: int
) -> tuple[list[Example], list[Example]]:
    """Train / evaluation split by workload group; deterministic in ``seed``."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be between 0 and 1, got {test_fraction}")
    train: list[Example] = []
    test: list[Example] = []
    for example in examples:
        (test if _bucket(example.group, seed) < test_fraction else train).append(example)
    return train, test


def groups(examples: Iterable[Example]) -> set[str]:
    return {example.group for example in examples}


#: Profile fields an agent may not be able to measure on a given server (the synchronisation
#: time needs performance_schema's wait/synch instruments, off by default on MariaDB).
OPTIONAL_MEASUREMENTS: tuple[str, ...] = ("sync_ms_per_request",)


def with_some_unmeasured(
    examples: Sequence[Example], *, share: float = 0.25, seed: int = 0
) -> list[Example]:
    """``examples`` with the optional measurements made unknown in a stable ``share`` of the
    workload groups that have them.

    A model that never saw a field missing routes a missing value down arbitrary branches
    (LightGBM treats it as zero: no contention at all). Masking a share of the training data
    teaches the trees where to send a host that cannot measure it, at little cost to the
    hosts that can.
    """
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
