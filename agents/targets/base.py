"""The contract between the agent and one database engine.

A target is the only part of the agent that talks to the database. It reads cumulative
counters (the profile and the climber work on their deltas), applies knobs and reads
them back. Errors come in two families: :class:`TargetUnavailable` is expected on a live
server (connection lost, server restarting, lock wait) and the loop survives it with
backoff; :class:`TargetMisconfigured` means the agent cannot do its job on this server
as configured (no thread pool, no rights) and stops it with a message saying what to fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from agents.knobs import Engine
from agents.wire import HostFacts


class TargetError(Exception):
    """Base of the errors a target raises."""


class TargetUnavailable(TargetError):
    """An expected, transient database error: retry later."""


class TargetMisconfigured(TargetError):
    """The server or the account cannot be tuned as configured; the message says why."""


class KnobApplyError(TargetError):
    """The server refused a knob value or read back something else than was set."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Cumulative counters and instantaneous gauges at one moment.

    ``counters`` only grow (until a server restart, which :attr:`uptime_s` reveals);
    ``gauges`` are point values (connections, threads). ``taken_at`` is a monotonic clock
    reading in seconds.
    """

    taken_at: float
    uptime_s: float
    counters: Mapping[str, float]
    gauges: Mapping[str, float]
    #: Server CPU seconds (user + system) from /proc, when the server runs on this host.
    cpu_seconds: float | None = None
    #: Latency histogram totals (query_response_time): count and total seconds.
    latency_count: float | None = None
    latency_total_s: float | None = None
    #: Collector name -> error text, for collectors that failed this time.
    collector_errors: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TargetInfo:
    """What :meth:`Target.check` found out about the server."""

    engine: Engine
    version: str
    thread_handling: str
    via_extra_port: bool
    latency_available: bool
    server_pid: int | None
    notes: tuple[str, ...] = ()


@runtime_checkable
class Target(Protocol):
    """One database server the agent tunes."""

    engine: Engine

    def connect(self) -> None:
        """Open (or re-open) the admin connection; raises :class:`TargetUnavailable`."""

    def close(self) -> None:
        """Close the admin connection; never raises."""

    def check(self, *, read_only: bool = False) -> TargetInfo:
        """Check the server can be tuned (thread pool on, rights to SET GLOBAL).

        Raises :class:`TargetMisconfigured` with an actionable message otherwise. With
        ``read_only`` nothing is set or installed on the server (``dry-run``).
        """

    def host_facts(self) -> HostFacts:
        """Hostname, engine version, CPU count and memory of the database host."""

    def read_counters(self) -> Snapshot:
        """One snapshot of every counter the collectors could read."""

    def current_tuple(self, names: list[str]) -> dict[str, int]:
        """The values of ``names`` in force now."""

    def apply(self, values: Mapping[str, int]) -> dict[str, int]:
        """Set ``values`` and return what the server reports back afterwards."""


@runtime_checkable
class RestoringTarget(Protocol):
    """A target whose saved tuple may hold ``None``: a knob that had no value of its own (a
    PgBouncer database that follows ``default_pool_size``). The state file's restore calls
    :meth:`restore` instead of :meth:`Target.apply` for such targets."""

    def restore(self, values: Mapping[str, int | None]) -> dict[str, int | None]:
        """Put ``values`` back (``None``: remove the knob's own value) and return them as
        read back, in the same form."""
