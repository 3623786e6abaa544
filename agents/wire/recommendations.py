"""Recommendations (request, answer, predicted gain) and approval requests."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)

from agents.knobs import Engine
from agents.wire.base import (
    IDEMPOTENCY_KEY,
    MODEL_VERSION_MAX_LENGTH,
    SCHEMA_VERSION,
    StrictModel,
    Text,
)
from agents.wire.workload import (
    HostFacts,
    KnobRange,
    KnobTuple,
    Source,
    WorkloadProfile,
)


class RecommendationRequest(StrictModel):
    schema_version: Literal[1] = SCHEMA_VERSION
    host: HostFacts
    profile: WorkloadProfile
    current_tuple: KnobTuple | None = Field(
        default=None, description="What the server runs now, if the agent knows it."
    )

    @model_validator(mode="after")
    def _same_engine(self) -> Self:
        if self.current_tuple is not None and self.current_tuple.engine != self.host.engine:
            raise ValueError("current_tuple.engine must match host.engine")
        return self


class PredictedGain(StrictModel):
    """Predicted throughput at the recommended tuple / at the host's current tuple, with an
    interval (docs/trainer.md, "Predicted gain")."""

    estimate: float = Field(gt=0.0, le=1000.0, examples=[1.18])
    low: float = Field(gt=0.0, le=1000.0, description="Lower end of the interval.")
    high: float = Field(gt=0.0, le=1000.0, description="Upper end of the interval.")

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if not self.low <= self.estimate <= self.high:
            raise ValueError(
                f"predicted_gain must satisfy low <= estimate <= high, got "
                f"{self.low} <= {self.estimate} <= {self.high}"
            )
        return self


class RecommendationResponse(StrictModel):
    schema_version: Literal[1] = SCHEMA_VERSION
    start_tuple: KnobTuple = Field(description="Where the agent should start climbing.")
    ranges: dict[str, KnobRange] = Field(
        description="A plausible interval per knob; the climber sizes its first steps from it."
    )
    source: Literal[Source.MODEL, Source.HEURISTIC, Source.LOCAL_HEURISTIC]
    model_version: Text | None = Field(
        default=None,
        max_length=MODEL_VERSION_MAX_LENGTH,
        description="'name:version' of the model that answered, if any.",
    )
    # The fields below are left out of the JSON at their defaults (as TraceSample.kind is), so
    # an answer without them reads exactly as before they existed.
    predicted_gain: PredictedGain | None = Field(
        default=None,
        exclude_if=lambda gain: gain is None,
        description="Predicted throughput at start_tuple / at the current tuple (the request's "
        "current_tuple, else the engine default), with an interval; only from a model that "
        "predicts it.",
    )
    novelty: float | None = Field(
        default=None,
        ge=0.0,
        le=1e6,
        exclude_if=lambda novelty: novelty is None,
        description="Distance of the profile from the model's training profiles, in units of "
        "the distance held-out profiles have (about 1 or less: like the training data).",
    )
    out_of_distribution: bool = Field(
        default=False,
        exclude_if=lambda flag: not flag,
        description="The profile lies outside the ranges the model was trained on: its ranges "
        "are widened and its answer is a guess.",
    )

    @model_validator(mode="after")
    def _ranges_cover_tuple(self) -> Self:
        for name, knob_range in self.ranges.items():
            if name not in self.start_tuple.values:
                raise ValueError(f"range given for {name!r}, which is not in start_tuple")
            value = self.start_tuple.values[name]
            if not knob_range.low <= value <= knob_range.high:
                raise ValueError(
                    f"start value {name}={value} is outside its range "
                    f"[{knob_range.low}, {knob_range.high}]"
                )
        if self.source == Source.MODEL and not self.model_version:
            raise ValueError("a model's answer must name its model_version")
        return self


#: The longest an agent may ask to wait for a decision: 30 days.
MAX_APPROVAL_TTL_S = 30 * 24 * 3600


class ApprovalState(enum.StrEnum):
    """Where an approval request stands; only ``pending`` ever changes."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    #: Nobody decided before ``expires_at``: the agent does nothing.
    EXPIRED = "expired"
    #: The agent asked again (a new request for the same host) before a decision.
    SUPERSEDED = "superseded"


class ApprovalCreate(BaseModel):
    """An agent in ``mode = "approve"`` asks before it applies ``recommendation``
    (``POST /v1/approvals``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    idempotency_key: str = Field(
        pattern=IDEMPOTENCY_KEY.pattern,
        description="Chosen by the agent and kept in its state file: asking again with the "
        "same key (after a restart) answers the same request.",
        examples=["approval-3f1c2a9e-6f7b-4b1e"],
    )
    profile: WorkloadProfile
    current_tuple: KnobTuple | None = Field(
        default=None, description="What the server runs now, as the agent read it."
    )
    recommendation: RecommendationResponse = Field(
        description="The service's answer to the agent's POST /v1/recommendations."
    )
    predicted_gain: PredictedGain | None = None
    ttl_s: int | None = Field(
        default=None,
        ge=60,
        le=MAX_APPROVAL_TTL_S,
        description="Wait at most this long; the service's POOLTUNE_APPROVAL_TTL_HOURS if unset "
        "(and never longer).",
    )


class ApprovalRead(BaseModel):
    """An approval request as the service stores it (``GET /v1/approvals/{id}``): the agent
    polls it and applies ``approved_tuple`` once ``state`` is ``approved``."""

    model_config = ConfigDict(from_attributes=True)

    id: int = Field(examples=[12])
    idempotency_key: str
    host_id: int
    agent_id: int | None = None
    engine: Engine
    state: ApprovalState
    created_at: datetime
    expires_at: datetime
    decided_at: datetime | None = None
    decided_by: str | None = None
    reason: str
    current_tuple: dict[str, int] | None = None
    recommended_tuple: dict[str, int]
    ranges: dict[str, list[int]] = Field(description="Plausible [low, high] per knob.")
    source: str
    model_version: str | None = None
    predicted_gain: PredictedGain | None = None
    approved_tuple: dict[str, int] | None = Field(
        default=None, description="Set once approved: the tuple the agent applies."
    )
    edited: bool
