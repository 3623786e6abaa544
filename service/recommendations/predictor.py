"""What a model artifact loads into: a predictor of (start tuple, range per knob).

Every artifact format (:mod:`service.recommendations.model_format`) turns into an object
with ``predict(host, profile)``; the service clips and completes its answer. A predictor that
also has ``recommend(host, profile, current)`` (the trainer's tuple model) adds the predicted
gain over the current tuple and how far the profile lies from its training data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agents.wire import HostFacts, WorkloadProfile

#: knob name -> start value, and knob name -> plausible inclusive (low, high).
Prediction = tuple[dict[str, int], dict[str, tuple[int, int]]]


@dataclass(frozen=True, slots=True)
class GainEstimate:
    """Predicted throughput at the recommended tuple / at the current one, with an interval."""

    estimate: float
    low: float
    high: float


@dataclass(frozen=True, slots=True)
class Recommendation:
    values: dict[str, int]
    ranges: dict[str, tuple[int, int]]
    predicted_gain: GainEstimate | None = None
    #: Distance from the training profiles (about 1 or less: like the training data).
    novelty: float | None = None
    out_of_distribution: bool = False


@runtime_checkable
class Predictor(Protocol):
    def predict(self, host: HostFacts, profile: WorkloadProfile) -> Prediction: ...


@runtime_checkable
class RecommendingPredictor(Protocol):
    def predict(self, host: HostFacts, profile: WorkloadProfile) -> Prediction: ...

    def recommend(
        self,
        host: HostFacts,
        profile: WorkloadProfile,
        current: Mapping[str, int] | None = None,
    ) -> Recommendation: ...


class ArtifactError(ValueError):
    """The artifact cannot be turned into a predictor."""
