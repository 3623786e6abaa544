"""The host, the workload profile and knob tuples: what an agent measured."""

from __future__ import annotations

import enum
from typing import Annotated, Self

from pydantic import (
    AfterValidator,
    Field,
    model_validator,
)

from agents import knobs as knob_catalog
from agents.knobs import Engine
from agents.wire.base import (
    ENGINE_VERSION_MAX_LENGTH,
    HOSTNAME_MAX_LENGTH,
    INT64_MAX,
    MAX_CPU_COUNT,
    Count32,
    Fraction,
    Integer,
    Key,
    Milliseconds,
    NonNegative,
    Rate,
    Real,
    StrictModel,
    Text,
    bounded_extras,
)

#: The profile extra holding the time per request spent waiting for row locks (PgBouncer's
#: profile measures it from pg_stat_activity); W/S leaves it out.
LOCK_WAIT_EXTRA = "lock_wait_ms_per_txn"
#: Profile extras that tell a pool on saturated CPUs (docs/agent.md, "The start tuple"):
#: the host's busy cores over the window and the mean number of pool connections open
#: (PgBouncer's profile has both when PostgreSQL runs on the agent's host).
HOST_CPU_BUSY_EXTRA = "host_cpu_busy"
POOL_CONNECTIONS_EXTRA = "pool_connections_mean"


class Source(enum.StrEnum):
    """Where a starting tuple came from."""

    MODEL = "model"
    HEURISTIC = "heuristic"
    #: The agent could not reach the service and used the heuristic locally.
    LOCAL_HEURISTIC = "local-heuristic"
    #: The tuple in force when the agent started (no recommendation asked).
    CURRENT = "current"
    DEFAULT = "default"


class HostFacts(StrictModel):
    """What an agent knows about its host and database server."""

    hostname: Text = Field(
        min_length=1, max_length=HOSTNAME_MAX_LENGTH, examples=["db-17.example.net"]
    )
    engine: Engine = Field(examples=["mariadb"])
    engine_version: Text = Field(
        min_length=1, max_length=ENGINE_VERSION_MAX_LENGTH, examples=["10.11.19-MariaDB"]
    )
    cpu_count: Integer = Field(ge=1, le=MAX_CPU_COUNT, examples=[16])
    memory_bytes: Integer = Field(ge=0, le=INT64_MAX, examples=[68_719_476_736])


class WorkloadProfile(StrictModel):
    """A workload as the agent measured it over an observation window.

    Fields an engine cannot tell are ``None`` (unknown), never 0. Times are per request
    (a query for query-level engines, a transaction for PgBouncer in transaction mode).
    """

    window_s: Real = Field(gt=0.0, le=86_400.0, description="Observation window, seconds.")
    connections: Count32 = Field(description="Client connections open (mean over the window).")
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
    extras: Annotated[dict[Key, Real], AfterValidator(bounded_extras)] = Field(
        default_factory=dict, description="Engine-specific counters, by name."
    )

    @property
    def overlappable_wait_ms(self) -> float | None:
        """W less the row-lock waits where the agent measured them (``extras`` under
        :data:`LOCK_WAIT_EXTRA`): a request waiting for a lock another one holds is
        contention — a larger pool adds waiters, not throughput — so that wait asks for no
        thread (docs/agent.md, "The start tuple")."""
        if self.wait_ms_per_request is None:
            return None
        lock_ms = self.extras.get(LOCK_WAIT_EXTRA, 0.0)
        return max(0.0, self.wait_ms_per_request - max(0.0, lock_ms))

    @property
    def blocking_coefficient(self) -> float | None:
        """W/S: how long a request waits off-CPU, lock waits aside, per unit of CPU time."""
        wait_ms = self.overlappable_wait_ms
        if self.cpu_ms_per_request is None or wait_ms is None:
            return None
        if self.cpu_ms_per_request <= 0:
            return None
        return wait_ms / self.cpu_ms_per_request

    @model_validator(mode="after")
    def _active_not_above_connections(self) -> Self:
        # Means over a window can exceed by rounding; a gross excess is a broken collector.
        # active <= connections * 1.05 + 1, compared exactly: a float against an int never
        # overflows in Python, while converting a huge int to float would.
        if 20 * (self.active_connections - 1) > 21 * self.connections:
            raise ValueError(
                f"active_connections ({self.active_connections}) cannot exceed "
                f"connections ({self.connections})"
            )
        return self


class KnobTuple(StrictModel):
    """Values of some knobs of one engine, each checked against the engine's catalog."""

    engine: Engine
    values: dict[Key, Integer] = Field(min_length=1, examples=[{"thread_pool_size": 8}])

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


class KnobRange(StrictModel):
    """A plausible interval for one knob (inclusive)."""

    low: Integer
    high: Integer

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.low > self.high:
            raise ValueError(f"range low ({self.low}) is above high ({self.high})")
        return self
