"""How the few real examples count against the many simulated ones.

A few dozen measured workloads next to tens of thousands of simulated ones would be drowned:
``weights`` gives each real example the weight that makes all of them together
``real_share`` of the simulated total; ``finetune`` fits the size model on the simulated
examples, then boosts a few more rounds on the real ones alone. The benchmark compares them on
the real leave-one-workload-out figure (docs/trainer.md, "Real and simulated").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from trainer.examples import Example

STRATEGIES = ("weights", "finetune")
#: The default real share, chosen on the real leave-one-workload-out figure (docs/trainer.md,
#: "Real and simulated").
DEFAULT_REAL_SHARE = 0.3


@dataclass(frozen=True)
class DomainWeighting:
    kind: str = "weights"
    #: The real examples' total weight as a share of the simulated examples' total.
    real_share: float = DEFAULT_REAL_SHARE
    #: ``finetune``: rounds boosted on the real examples, and their learning rate.
    finetune_rounds: int = 30
    finetune_learning_rate: float = 0.05

    def __post_init__(self) -> None:
        if self.kind not in STRATEGIES:
            raise ValueError(f"unknown weighting {self.kind!r}; choose from {STRATEGIES}")
        if not 0.0 <= self.real_share <= 100.0:
            raise ValueError(f"real_share must be between 0 and 100, got {self.real_share}")

    @property
    def label(self) -> str:
        if self.kind == "weights":
            return f"weights (real share {self.real_share:g})"
        return f"finetune ({self.finetune_rounds} rounds at {self.finetune_learning_rate:g})"


def sample_weights(examples: Sequence[Example], *, real_share: float) -> NDArray[np.float64]:
    """Weight 1 per simulated example; each real one ``real_share × simulated / real`` (at
    least 1), so the real ones together weigh ``real_share`` of the simulated ones. All 1
    when either kind is missing."""
    real = np.array([e.is_real for e in examples], dtype=bool)
    n_real, n_simulated = int(real.sum()), int((~real).sum())
    if n_real == 0 or n_simulated == 0:
        return np.ones(len(examples))
    return np.where(real, max(1.0, real_share * n_simulated / n_real), 1.0)
