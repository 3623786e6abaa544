"""Climb reports and their traces."""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Annotated, Literal, Self

from pydantic import (
    AfterValidator,
    Field,
    field_validator,
    model_validator,
)

from agents import knobs as knob_catalog
from agents.wire.base import (
    CLIMBER_NAME_MAX_LENGTH,
    CLIMBER_VERSION_MAX_LENGTH,
    IDEMPOTENCY_KEY,
    IDEMPOTENCY_KEY_MAX_LENGTH,
    MAX_TRACE_SAMPLES,
    MODEL_VERSION_MAX_LENGTH,
    SCHEMA_VERSION,
    SETTING_TEXT_MAX_LENGTH,
    STATE_MAX_LENGTH,
    WORKLOAD_GROUP_MAX_LENGTH,
    Count32,
    Integer,
    Key,
    Milliseconds,
    Rate,
    Real,
    StrictBool,
    StrictModel,
    Text,
    UtcDatetime,
    bounded_settings,
    stored_text,
)
from agents.wire.workload import (
    HostFacts,
    KnobTuple,
    Source,
    WorkloadProfile,
)


class TraceKind(enum.StrEnum):
    """Who chose a trace sample's knobs."""

    CLIMB = "climb"
    #: A sweep: one knob (``sweep_knob``) stepped through values, the others held.
    SWEEP = "sweep"


# The fields below that default to "absent" are left out of dumps at that default: a payload
# without them (from an older agent) serialises, and so hashes for idempotency
# (service.reports.service.payload_sha256), exactly as before they existed.


class TraceSample(StrictModel):
    """One sample of a climb (or of a sweep): what was in force and what it gave."""

    t_s: Real = Field(ge=0.0, description="Seconds since the climb started.")
    knobs: dict[Key, Integer] = Field(min_length=1)
    throughput: Rate
    latency_ms: Milliseconds | None = None
    connections: Count32
    state: Text = Field(default="", max_length=STATE_MAX_LENGTH, description="The climber's state.")
    kind: TraceKind = Field(
        default=TraceKind.CLIMB,
        exclude_if=lambda kind: kind == TraceKind.CLIMB,
        description="climb: a climber chose the knobs; sweep: one knob stepped through "
        "values with the others held (a dataset's measured curve).",
    )
    sweep_knob: Key | None = Field(
        default=None,
        exclude_if=lambda name: name is None,
        description="The knob a sweep sample varies (one of ``knobs``); only for kind sweep.",
    )

    @model_validator(mode="after")
    def _sweep_names_its_knob(self) -> Self:
        if self.kind == TraceKind.SWEEP:
            if self.sweep_knob is None:
                raise ValueError("a trace sample of kind 'sweep' must name its sweep_knob")
            if self.sweep_knob not in self.knobs:
                raise ValueError(f"sweep_knob {self.sweep_knob!r} is not one of the sample's knobs")
        elif self.sweep_knob is not None:
            raise ValueError("sweep_knob is only for trace samples of kind 'sweep'")
        return self


class ClimberInfo(StrictModel):
    name: Text = Field(min_length=1, max_length=CLIMBER_NAME_MAX_LENGTH, examples=["pooltune"])
    version: Text = Field(default="1", max_length=CLIMBER_VERSION_MAX_LENGTH)
    settings: Annotated[
        dict[
            Key,
            StrictBool
            | Integer
            | Real
            | Annotated[str, Field(max_length=SETTING_TEXT_MAX_LENGTH), AfterValidator(stored_text)]
            | None,
        ],
        AfterValidator(bounded_settings),
    ] = Field(default_factory=dict)
    workload_group: Text | None = Field(
        default=None,
        min_length=1,
        max_length=WORKLOAD_GROUP_MAX_LENGTH,
        exclude_if=lambda group: group is None,
        description="Reports of one group are never split between the trainer's training and "
        "evaluation sets (a dataset's workload group); none: the host is the group.",
        examples=["mariadb-2core-v1:oltp_read_write"],
    )


class ClimbReport(StrictModel):
    """What an agent uploads when a climb converged (or gave up)."""

    schema_version: Literal[1] = SCHEMA_VERSION
    idempotency_key: Text = Field(
        description="Unique per climb, chosen by the agent (a UUID is fine): 8 to "
        f"{IDEMPOTENCY_KEY_MAX_LENGTH} of A-Z a-z 0-9 . _ : -. The same key twice stores one "
        "report.",
        examples=["3f1c2a9e-6f7b-4b1e-9d2a-0c4e5b6a7d8f"],
        # Published for clients; the validator below checks it with a message of its own.
        json_schema_extra={"pattern": IDEMPOTENCY_KEY.pattern},
    )
    host: HostFacts
    profile: WorkloadProfile
    start_tuple: KnobTuple
    start_source: Source
    start_model_version: Text | None = Field(default=None, max_length=MODEL_VERSION_MAX_LENGTH)
    optimal_tuple: KnobTuple
    default_tuple: KnobTuple | None = None
    throughput_start: Rate
    throughput_optimal: Rate
    throughput_default: Rate | None = Field(
        default=None, description="Throughput at the engine's default tuple, where measured."
    )
    converged: StrictBool
    samples_to_converge: Count32 | None = None
    trace: list[TraceSample] = Field(
        default_factory=list,
        max_length=MAX_TRACE_SAMPLES,
        description=f"The climb, one sample every ~2 s; at most {MAX_TRACE_SAMPLES} samples.",
    )
    climber: ClimberInfo
    started_at: UtcDatetime
    finished_at: UtcDatetime

    @field_validator("idempotency_key")
    @classmethod
    def _key_shape(cls, key: str) -> str:
        if not IDEMPOTENCY_KEY.match(key):
            raise ValueError(
                f"idempotency_key must be 8 to {IDEMPOTENCY_KEY_MAX_LENGTH} characters of "
                "A-Z a-z 0-9 . _ : - starting with a letter or digit (a UUID works)"
            )
        return key

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        engine = self.host.engine
        for name in ("start_tuple", "optimal_tuple", "default_tuple"):
            knob_tuple = getattr(self, name)
            if knob_tuple is not None and knob_tuple.engine != engine:
                raise ValueError(
                    f"{name}.engine ({knob_tuple.engine.value}) must match host.engine "
                    f"({engine.value})"
                )
        if self.finished_at < self.started_at:
            raise ValueError("finished_at is before started_at")
        if self.converged and self.samples_to_converge is None:
            raise ValueError("a converged report must give samples_to_converge")
        if self.trace:
            catalog = knob_catalog.catalog(engine)
            for index, sample in enumerate(self.trace):
                for name, value in sample.knobs.items():
                    knob = catalog.get(name)
                    if knob is None or not knob.contains(value):
                        raise ValueError(
                            f"trace[{index}].knobs: {name}={value} is not a valid "
                            f"{engine.value} knob value"
                        )
        return self


def utcnow() -> datetime:
    return datetime.now(UTC)
