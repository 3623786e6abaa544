"""A tuple model from a recipe: the knobs' boosters, the novelty model and the throughput
curve, before calibration (:mod:`trainer.refit` calibrates it)."""

from __future__ import annotations

from collections.abc import Sequence

from agents.knobs import Engine
from service.recommendations.tuple_model import TupleModel
from trainer.examples import Example
from trainer.fit import Recipe, fit_knob_models
from trainer.gain import fit_throughput_curve
from trainer.uncertainty import fit_novelty


def fit_uncalibrated(
    engine: Engine,
    examples: Sequence[Example],
    recipe: Recipe,
    *,
    seed: int,
    secondary: bool = True,
) -> TupleModel:
    """Boosters, novelty model and throughput curve fitted on ``examples``; ranges and gain
    intervals not yet calibrated."""
    return TupleModel(
        engine=engine,
        knob_models=fit_knob_models(engine, examples, recipe, secondary=secondary),
        quantiles=recipe.quantiles,
        novelty=fit_novelty(examples, seed=seed),
        curve=fit_throughput_curve(examples, recipe.weights(examples), seed=seed),
    )
