"""The final model from a recipe, calibrated: fitted on every example, its ranges and gain
intervals calibrated on held-out simulated cases (a validation split) and real ones
(cross-validation by workload, :mod:`trainer.crossval`).

The calibration needs models that did not see the cases they are judged on, so besides the
final fit there is one fit on the validation split's training part and one per real fold
(docs/trainer.md, "Honest uncertainty").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agents.knobs import Engine
from service.recommendations.intervals import REAL, SIMULATED
from service.recommendations.tuple_model import TupleModel
from trainer.crossval import cross_validate
from trainer.examples import Example
from trainer.fit import Recipe
from trainer.model import fit_uncalibrated
from trainer.uncertainty import HeldOut, calibrated, held_out


@dataclass
class CalibratedFit:
    model: TupleModel
    #: The held-out answers the calibration was fitted on, by domain.
    held_out: dict[str, HeldOut]


def fit_calibrated(
    engine: Engine,
    examples: Sequence[Example],
    recipe: Recipe,
    *,
    validation: tuple[Sequence[Example], Sequence[Example]],
    seed: int,
    real_folds: int = 10,
    on_stage: Callable[[str], None] | None = None,
) -> CalibratedFit:
    """The final model on all ``examples``, calibrated on the simulated cases of the
    ``validation`` split's held-out part (answered by a model fitted on its other part) and
    on real cross-validation over ``examples``."""
    stage = on_stage or (lambda _stage: None)
    fit_part, valid_part = validation
    records: dict[str, HeldOut] = {}
    simulated_valid = [e for e in valid_part if not e.is_real]
    if simulated_valid:
        stage("calibrating on the simulated validation workloads")
        part_model = fit_uncalibrated(engine, fit_part, recipe, seed=seed)
        records[SIMULATED] = held_out(part_model, simulated_valid)
    if any(e.is_real for e in examples):
        stage("cross-validating on the real workloads")
        real = cross_validate(engine, examples, recipe, seed=seed, max_folds=real_folds)
        if real is not None:
            records[REAL] = real
    stage("fitting the final model")
    final = fit_uncalibrated(engine, examples, recipe, seed=seed)
    model = calibrated(final, records, nominal=recipe.quantiles[1] - recipe.quantiles[0])
    return CalibratedFit(model=model, held_out=records)
