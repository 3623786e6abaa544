from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agents.knobs import Engine


class ModelVersionRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int = Field(examples=[3])
    engine: Engine
    name: str = Field(examples=["lgbm-start-tuple"])
    version: int = Field(examples=[2], description="Numbered per (engine, name) by the database.")
    artifact_sha256: str
    artifact_size: int = Field(description="Bytes.")
    metrics: dict[str, Any] = Field(examples=[{"regret": 0.041, "regret_p90": 0.12}])
    training_summary: dict[str, Any] = Field(
        examples=[{"reports": 1840, "workloads": 212, "datasets": ["sim-v1"]}]
    )
    is_promoted: bool
    created_at: datetime
    promoted_at: datetime | None = None


class PromotionEventRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    action: str = Field(examples=["promote"])
    reason: str
    forced: bool
    replaced_version_id: int | None = None
    created_at: datetime


class ModelVersionDetail(ModelVersionRead):
    history: list[PromotionEventRead] = Field(
        default_factory=list, description="Promotions and demotions of this version."
    )


class PromoteRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="", max_length=2000, examples=["regret 0.041 < 0.058 on holdout"])
    forced: bool = Field(
        default=False,
        description="Promote even if it does not beat the promoted version's regret.",
    )


class DemoteRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="", max_length=2000, examples=["bad starts on PgBouncer hosts"])
