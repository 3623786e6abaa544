from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from agents.knobs import Engine
from agents.wire import ClimbReport, Source


class ReportSummary(BaseModel):
    """A stored report without its profile and trace; also the answer to an upload."""

    id: int = Field(examples=[42])
    idempotency_key: str = Field(examples=["3f1c2a9e-6f7b-4b1e-9d2a-0c4e5b6a7d8f"])
    host_id: int = Field(examples=[1])
    engine: Engine
    received_at: datetime
    started_at: datetime
    finished_at: datetime
    converged: bool
    samples_to_converge: int | None = None
    start_source: Source
    start_model_version: str | None = None
    start_tuple: dict[str, int] = Field(examples=[{"thread_pool_size": 16}])
    optimal_tuple: dict[str, int] = Field(examples=[{"thread_pool_size": 12}])
    throughput_start: float
    throughput_optimal: float
    throughput_default: float | None = None
    trace_samples: int = Field(ge=0, description="Samples in the stored trace.")
    damaged: list[str] = Field(
        default_factory=list,
        description="Stored values that could not be read, and what was wrong: a damaged "
        "row is shown with those values empty instead of failing the request.",
    )


class ReportRead(ReportSummary):
    """A stored report, whole: the uploaded payload as it was received, trace included."""

    report: ClimbReport | None = Field(
        description="The uploaded payload; null when the stored row no longer makes a valid "
        "report (see `damaged`)."
    )
