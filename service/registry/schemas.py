from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agents.knobs import Engine
from agents.wire import StrictBool, Text
from service.stored_json import json_object, row_fields

#: ``model_versions.name``.
MODEL_NAME_MAX_LENGTH = 100
#: Why a promotion or demotion was made (a text column; the bound is for sanity).
REASON_MAX_LENGTH = 2000


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
    damaged: list[str] = Field(
        default_factory=list,
        description="Stored values that could not be read (shown empty), and what was wrong.",
    )

    @model_validator(mode="before")
    @classmethod
    def _tolerate_damaged_json(cls, data: Any) -> Any:
        fields = row_fields(data, cls.model_fields)
        damaged = list(fields.get("damaged") or [])
        row = f"model_versions/{fields.get('id')}"
        for name in ("metrics", "training_summary"):
            fields[name] = json_object(fields.get(name), name, damaged, row=row)
        fields["damaged"] = damaged
        return fields


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

    reason: Text = Field(
        default="", max_length=REASON_MAX_LENGTH, examples=["regret 0.041 < 0.058 on holdout"]
    )
    forced: StrictBool = Field(
        default=False,
        description="Promote even if it does not beat the promoted version's regret.",
    )


class DemoteRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: Text = Field(
        default="", max_length=REASON_MAX_LENGTH, examples=["bad starts on PgBouncer hosts"]
    )
