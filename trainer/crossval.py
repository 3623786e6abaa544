"""Cross-validation on the real workloads: hold each real workload group out in turn (or, with
many groups, one of ``max_folds`` sets of them), fit on everything else — the simulated
examples included — and answer the held-out cases.

With a few dozen real cases this is leave-one-workload-out: the headline real figure of the
model card and of the promotion gate, and what the real calibration is fitted on. The
baselines are fitted on the same training part of each fold.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from agents.knobs import Engine
from trainer.evaluation import baseline_predictors
from trainer.examples import Example, workload_of
from trainer.fit import Recipe
from trainer.model import fit_uncalibrated
from trainer.uncertainty import HeldOut, held_out


def real_folds(examples: Sequence[Example], *, max_folds: int) -> list[set[str]]:
    """The real workload groups, one per fold (leave-one-workload-out), or spread over
    ``max_folds`` folds by a stable hash when there are more groups."""
    names = sorted({e.group for e in examples if e.is_real})
    if len(names) <= max_folds:
        return [{name} for name in names]
    folds: list[set[str]] = [set() for _ in range(max_folds)]
    for name in names:
        digest = hashlib.sha256(name.encode()).digest()
        folds[int.from_bytes(digest[:4], "big") % max_folds].add(name)
    return [fold for fold in folds if fold]


def cross_validate(
    engine: Engine,
    examples: Sequence[Example],
    recipe: Recipe,
    *,
    seed: int,
    max_folds: int = 10,
) -> HeldOut | None:
    """Every real example answered by a model that never saw its workload group; None when
    there is no real example, or no other data to train a fold on."""
    parts = []
    for fold in real_folds(examples, max_folds=max_folds):
        held = {workload_of(group) for group in fold}
        # Nothing of a held-out workload trains its fold: not its other datasets' cases,
        # nor the simulated workloads calibrated on its curve.
        train = [e for e in examples if workload_of(e.group) not in held]
        test = [e for e in examples if e.group in fold and e.is_real]
        if len({e.group for e in train}) < 2 or not test:
            continue
        model = fit_uncalibrated(engine, train, recipe, seed=seed, secondary=False)
        part = held_out(model, test)
        part.baselines = {
            name: np.asarray(predict(test), dtype=np.float64)
            for name, predict in baseline_predictors(train).items()
        }
        parts.append(part)
    return HeldOut.concatenate(parts) if parts else None
