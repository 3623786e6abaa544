"""The wire contract between agents, the service and the trainer.

This module is the single source of truth for what crosses the network: the service
and the trainer import these models; nothing else defines a payload. Every model
rejects NaN and infinity, negative rates and counts, unknown fields, unknown engines
and knob values outside the engine's catalog (:mod:`agents.knobs`), with messages that
name the field and the accepted range.

Versioning: every top-level payload carries ``schema_version``. A change that an older
reader cannot ignore bumps :data:`SCHEMA_VERSION`; readers refuse versions they do not
know instead of guessing.
"""

from __future__ import annotations

import enum
import re
from datetime import UTC, datetime
from typing import Annotated, Literal, Self

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from agents import knobs as knob_catalog
from agents.knobs import Engine

SCHEMA_VERSION: Literal[1] = 1

#: Longest climb trace a report may carry: 10,000 samples is 5.5 hours at one sample
#: every 2 s, far beyond any climb; longer traces must be cut by the agent (keep the end).
MAX_TRACE_SAMPLES = 10_000

#: Most engine-specific counters a profile may carry in ``extras``.
MAX_EXTRAS = 200

_IDEMPOTENCY_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{7,127}$")


class _Strict(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        frozen=True,
        str_strip_whitespace=True,
    )


NonNegative = Annotated[float, Field(ge=0.0)]
Rate = Annotated[float, Field(ge=0.0, description="Per second; finite, never negative.")]
Milliseconds = Annotated[float, Field(ge=0.0, description="Milliseconds; finite, not negative.")]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]


def _bounded_extras(extras: dict[str, float]) -> dict[str, float]:
    if len(extras) > MAX_EXTRAS:
        raise ValueError(f"at most {MAX_EXTRAS} extras are accepted, got {len(extras)}")
    for key in extras:
        if not key or len(key) > 100:
            raise ValueError(f"extras keys must be 1 to 100 characters long, got {key!r}")
    return extras


class Source(enum.StrEnum):
    """Where a starting tuple came from."""

    MODEL = "model"
    HEURISTIC = "heuristic"
    #: The agent could not reach the service and used the heuristic locally.
    LOCAL_HEURISTIC = "local-heuristic"
    #: The tuple in force when the agent started (no recommendation asked).
    CURRENT = "current"
    DEFAULT = "default"


class HostFacts(_Strict):
    """What an agent knows about its host and database server."""

    hostname: str = Field(min_length=1, max_length=253, examples=["db-17.example.net"])
    engine: Engine = Field(examples=["mariadb"])
    engine_version: str = Field(min_length=1, max_length=100, examples=["10.11.19-MariaDB"])
    cpu_count: int = Field(ge=1, le=4096, examples=[16])
    memory_bytes: int = Field(ge=0, examples=[68_719_476_736])


class WorkloadProfile(_Strict):
    """A workload as the agent measured it over an observation window.

    Fields an engine cannot tell are ``None`` (unknown), never 0. Times are per request
    (a query for query-level engines, a transaction for PgBouncer in transaction mode).
    """

    window_s: float = Field(gt=0.0, le=86_400.0, description="Observation window, seconds.")
    connections: int = Field(ge=0, description="Client connections open (mean over the window).")
    active_connections: NonNegative = Field(
        description="Connections with a request in the server (mean): the offered concurrency."
    )
    qps: Rate = Field(description="Queries per second.")
    tps: Rate = Field(description="Transactions (commits + rollbacks) per second.")
    read_fraction: Fraction | None = Field(
        default=None, description="Share of statements that only read (0 = all writes)."
    )
    latency_ms: Milliseconds | None = Field(
        default=None,
        description="Mean statement execution time in the server (time queued in the pool "
        "before a thread picks the statement up is not in it).",
    )
    cpu_ms_per_request: Milliseconds | None = Field(
        default=None, description="Server CPU time per request: the service time S."
    )
    wait_ms_per_request: Milliseconds | None = Field(
        default=None,
        description="Wait per request while executing, off its CPU time (IO, locks, a share "
        "of busy CPUs): latency minus CPU time, W.",
    )
    rounds_per_request: NonNegative | None = Field(
        default=None, description="CPU bursts separated by waits, per request."
    )
    think_ms: Milliseconds | None = Field(
        default=None, description="Client think time between a connection's requests."
    )
    io_reads_per_txn: NonNegative | None = None
    fsyncs_per_txn: NonNegative | None = None
    lock_waits_per_s: Rate | None = Field(default=None, description="Row/table lock waits.")
    thread_create_ms: Milliseconds | None = Field(
        default=None, description="Latency of creating a worker thread."
    )
    sync_ms_per_request: Milliseconds | None = Field(
        default=None,
        description="Time per request spent synchronising inside the server: waiting for "
        "and spinning on mutexes and latches (performance_schema wait/synch). The contention "
        "that makes more threads cost more than they bring.",
    )
    extras: Annotated[dict[str, float], AfterValidator(_bounded_extras)] = Field(
        default_factory=dict, description="Engine-specific counters, by name."
    )

    @property
    def blocking_coefficient(self) -> float | None:
        """W/S: how long a request waits off-CPU per unit of CPU time."""
        if self.cpu_ms_per_request is None or self.wait_ms_per_request is None:
            return None
        if self.cpu_ms_per_request <= 0:
            return None
        return self.wait_ms_per_request / self.cpu_ms_per_request

    @model_validator(mode="after")
    def _active_not_above_connections(self) -> Self:
        # Means over a window can exceed by rounding; a gross excess is a broken collector.
        if self.active_connections > self.connections * 1.05 + 1:
            raise ValueError(
                f"active_connections ({self.active_connections}) cannot exceed "
                f"connections ({self.connections})"
            )
        return self


class KnobTuple(_Strict):
    """Values of some knobs of one engine, each checked against the engine's catalog."""

    engine: Engine
    values: dict[str, int] = Field(min_length=1, examples=[{"thread_pool_size": 8}])

    @model_validator(mode="after")
    def _inside_catalog(self) -> Self:
        knobs = knob_catalog.catalog(self.engine)
        for name, value in self.values.items():
            if name not in knobs:
                raise ValueError(
                    f"{name!r} is not a knob of {self.engine.value}; known: {', '.join(knobs)}"
                )
            knob = knobs[name]
            if not knob.contains(value):
                raise ValueError(
                    f"{name}={value} is outside {self.engine.value}'s bounds "
                    f"[{knob.minimum}, {knob.maximum}] ({knob.unit})"
                )
        return self

    def __getitem__(self, name: str) -> int:
        return self.values[name]


class KnobRange(_Strict):
    """A plausible interval for one knob (inclusive)."""

    low: int
    high: int

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.low > self.high:
            raise ValueError(f"range low ({self.low}) is above high ({self.high})")
        return self


class RecommendationRequest(_Strict):
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


class RecommendationResponse(_Strict):
    schema_version: Literal[1] = SCHEMA_VERSION
    start_tuple: KnobTuple = Field(description="Where the agent should start climbing.")
    ranges: dict[str, KnobRange] = Field(
        description="A plausible interval per knob; the climber sizes its first steps from it."
    )
    source: Literal[Source.MODEL, Source.HEURISTIC, Source.LOCAL_HEURISTIC]
    model_version: str | None = Field(
        default=None, description="'name:version' of the model that answered, if any."
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


class TraceSample(_Strict):
    """One sample of a climb: what was in force and what it gave."""

    t_s: float = Field(ge=0.0, description="Seconds since the climb started.")
    knobs: dict[str, int] = Field(min_length=1)
    throughput: Rate
    latency_ms: Milliseconds | None = None
    connections: int = Field(ge=0)
    state: str = Field(default="", max_length=32, description="The climber's state.")


class ClimberInfo(_Strict):
    name: str = Field(min_length=1, max_length=64, examples=["pooltune"])
    version: str = Field(default="1", max_length=32)
    settings: dict[str, float | int | str | bool | None] = Field(default_factory=dict)


class ClimbReport(_Strict):
    """What an agent uploads when a climb converged (or gave up)."""

    schema_version: Literal[1] = SCHEMA_VERSION
    idempotency_key: str = Field(
        description="Unique per climb, chosen by the agent (a UUID is fine): 8 to 128 of "
        "A-Z a-z 0-9 . _ : -. The same key twice stores one report.",
        examples=["3f1c2a9e-6f7b-4b1e-9d2a-0c4e5b6a7d8f"],
    )
    host: HostFacts
    profile: WorkloadProfile
    start_tuple: KnobTuple
    start_source: Source
    start_model_version: str | None = None
    optimal_tuple: KnobTuple
    default_tuple: KnobTuple | None = None
    throughput_start: Rate
    throughput_optimal: Rate
    throughput_default: Rate | None = Field(
        default=None, description="Throughput at the engine's default tuple, where measured."
    )
    converged: bool
    samples_to_converge: int | None = Field(default=None, ge=0)
    trace: list[TraceSample] = Field(
        default_factory=list,
        max_length=MAX_TRACE_SAMPLES,
        description=f"The climb, one sample every ~2 s; at most {MAX_TRACE_SAMPLES} samples.",
    )
    climber: ClimberInfo
    started_at: AwareDatetime
    finished_at: AwareDatetime

    @field_validator("idempotency_key")
    @classmethod
    def _key_shape(cls, key: str) -> str:
        if not _IDEMPOTENCY_KEY.match(key):
            raise ValueError(
                "idempotency_key must be 8 to 128 characters of A-Z a-z 0-9 . _ : - "
                "starting with a letter or digit (a UUID works)"
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
