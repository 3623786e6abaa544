"""Approval payloads of the admin's decisions. The agent's request (``ApprovalCreate``), the
stored request (``ApprovalRead``) and ``PredictedGain`` belong to the wire contract and live in
``agents.wire``; they are re-exported here for the service's modules."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agents.wire import ApprovalCreate, ApprovalRead, PredictedGain

__all__ = [
    "ApprovalCreate",
    "ApprovalDecision",
    "ApprovalRead",
    "ApprovalRejection",
    "PredictedGain",
]


class ApprovalDecision(BaseModel):
    """An admin's approval, optionally with an edited tuple inside the catalog's bounds."""

    model_config = ConfigDict(extra="forbid")

    values: dict[str, int] | None = Field(
        default=None,
        description="Knob values to apply instead of the recommendation's (each inside the "
        "engine's catalog bounds); the recommendation as it is if unset.",
        examples=[{"thread_pool_size": 10}],
    )
    reason: str = Field(default="", max_length=2000)


class ApprovalRejection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="", max_length=2000)
