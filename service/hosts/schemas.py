from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agents.knobs import Engine
from service.reports.schemas import ReportSummary
from service.stored_json import knob_values, row_fields


class HostRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int = Field(examples=[1])
    hostname: str = Field(examples=["db-17.example.net"])
    engine: Engine
    engine_version: str = Field(examples=["10.11.19-MariaDB"])
    cpu_count: int = Field(examples=[16])
    memory_bytes: int
    current_tuple: dict[str, int] | None = Field(
        default=None,
        description="The optimal tuple of the host's latest report: what it runs now.",
        examples=[{"thread_pool_size": 12, "thread_pool_oversubscribe": 3}],
    )
    last_report_id: int | None = None
    last_report_at: datetime | None = None
    created_at: datetime
    updated_at: datetime
    damaged: list[str] = Field(
        default_factory=list,
        description="Stored values that could not be read (shown empty), and what was wrong.",
    )

    @model_validator(mode="before")
    @classmethod
    def _tolerate_damaged_json(cls, data: Any) -> Any:
        fields = row_fields(data, cls.model_fields)
        if fields.get("current_tuple") is not None:
            damaged = list(fields.get("damaged") or [])
            row = f"hosts/{fields.get('id')}"
            fields["current_tuple"] = knob_values(
                fields["current_tuple"], "current_tuple", damaged, row=row
            )
            fields["damaged"] = damaged
        return fields


class HostDetail(HostRead):
    last_report: ReportSummary | None = Field(default=None, description="The newest report.")
    gain_over_default: float | None = Field(
        default=None,
        description="throughput_optimal / throughput_default - 1 of the newest report, "
        "where the default tuple was measured.",
        examples=[0.23],
    )
