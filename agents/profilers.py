"""Which profiler reads a target's snapshots: the one seam between the engine-neutral loop,
sweep and commands and each engine's counters.

Every engine's profile module has the same four functions over its own counters
(:mod:`agents.profile` for MariaDB and Percona, :mod:`agents.pgbouncer.profile` for
PgBouncer); the loop, the sweep and ``pooltune-agent test / dry-run`` call them through the
:class:`Profiler` of their target.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agents import profile as mariadb_profile
from agents.knobs import Engine
from agents.pgbouncer import profile as pgbouncer_profile
from agents.profile import Interval
from agents.targets.base import Snapshot, Target
from agents.wire import WorkloadProfile


@dataclass(frozen=True, slots=True)
class Profiler:
    """One engine's snapshot arithmetic (see the module docstring)."""

    interval: Callable[[Snapshot, Snapshot], Interval]
    build_profile: Callable[[Sequence[Snapshot]], WorkloadProfile]
    throughput_cv: Callable[[Sequence[Snapshot]], float]
    restarted_between: Callable[[Snapshot, Snapshot], bool]


MARIADB = Profiler(
    interval=mariadb_profile.interval,
    build_profile=mariadb_profile.build_profile,
    throughput_cv=mariadb_profile.throughput_cv,
    restarted_between=mariadb_profile.restarted_between,
)
PGBOUNCER = Profiler(
    interval=pgbouncer_profile.interval,
    build_profile=pgbouncer_profile.build_profile,
    throughput_cv=pgbouncer_profile.throughput_cv,
    restarted_between=pgbouncer_profile.restarted_between,
)


def profiler_for(engine: Engine | str) -> Profiler:
    """The profiler of ``engine``'s counters."""
    return PGBOUNCER if Engine(engine) is Engine.PGBOUNCER else MARIADB


def target_profiler(target: Target) -> Profiler:
    """The profiler of what ``target`` reads: the engine named by its ``counters_engine``
    when it has one (the simulator emits MariaDB's counters for every engine), else its
    engine's."""
    return profiler_for(getattr(target, "counters_engine", target.engine))
