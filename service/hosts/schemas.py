from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from agents.knobs import Engine
from service.reports.schemas import ReportSummary


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


class HostDetail(HostRead):
    last_report: ReportSummary | None = Field(default=None, description="The newest report.")
    gain_over_default: float | None = Field(
        default=None,
        description="throughput_optimal / throughput_default - 1 of the newest report, "
        "where the default tuple was measured.",
        examples=[0.23],
    )
