"""Knob catalogs: what pooltune may tune on each engine, with the server's own bounds.

A knob whose default depends on the host (``thread_pool_size`` = CPU count) has
``default=None`` and ``default_is_cpu_count=True``; use :func:`default_tuple` to resolve it.
The sources of each catalog: docs/agent.md, "Knob catalogs".
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


class Engine(enum.StrEnum):
    """Database engines pooltune can tune."""

    MARIADB = "mariadb"
    PERCONA = "percona"
    PGBOUNCER = "pgbouncer"


class KnobType(enum.StrEnum):
    INT = "int"
    BOOL = "bool"
    ENUM = "enum"


@dataclass(frozen=True, slots=True)
class Knob:
    """One tunable server variable."""

    name: str
    type: KnobType
    minimum: int
    maximum: int
    default: int | None
    dynamic: bool
    unit: str
    description: str
    #: Whether the climber searches this knob in log space (sizes, timeouts).
    log_scale: bool = False
    #: The default is the host's CPU count (thread_pool_size).
    default_is_cpu_count: bool = False
    #: Knobs the tuple climber visits after the pool size, in order of priority.
    tuned: bool = False

    def default_for(self, cpu_count: int) -> int:
        """The server default on a host with ``cpu_count`` CPUs, clipped to the bounds."""
        if self.default_is_cpu_count:
            return self.clip(cpu_count)
        assert self.default is not None
        return self.default

    def clip(self, value: float) -> int:
        return clip_to_bounds(value, self.minimum, self.maximum)

    def contains(self, value: int) -> bool:
        return self.minimum <= value <= self.maximum


def clip_to_bounds(value: float, low: int, high: int) -> int:
    """``value`` rounded to the nearest integer inside [``low``, ``high``]: the one clipping
    rule for knob values (catalog bounds, the operator's hard bounds, a climber's space)."""
    return int(min(high, max(low, round(value))))


def pool_size_ceiling(connections: float, low: int, high: int) -> int:
    """No more threads than connections: the largest pool size that can help a server with
    ``connections`` client connections open, inside [``low``, ``high``]; ``high`` when the
    connections are unknown (0 or less)."""
    if connections <= 0:
        return high
    return clip_to_bounds(connections, low, high)


def _catalog(*knobs: Knob) -> Mapping[str, Knob]:
    return MappingProxyType({knob.name: knob for knob in knobs})


_THREAD_POOL_SIZE = Knob(
    name="thread_pool_size",
    type=KnobType.INT,
    minimum=1,
    maximum=128,
    default=None,
    default_is_cpu_count=True,
    dynamic=True,
    unit="thread groups",
    description="Number of thread groups; about one active worker per group. "
    "The main knob. Runtime maximum is max(startup value, 128).",
    log_scale=True,
    tuned=True,
)
_THREAD_POOL_OVERSUBSCRIBE = Knob(
    name="thread_pool_oversubscribe",
    type=KnobType.INT,
    minimum=1,
    maximum=1000,
    default=3,
    dynamic=True,
    unit="threads",
    description="How many extra active threads a group may run before it stops waking more.",
    log_scale=True,
    tuned=True,
)
_THREAD_POOL_STALL_LIMIT = Knob(
    name="thread_pool_stall_limit",
    type=KnobType.INT,
    minimum=10,
    maximum=60000,
    default=500,
    dynamic=True,
    unit="ms",
    description="Time after which a running thread is considered stalled and another is woken; "
    "also the pool's timer tick. Below 500 it switches off thread-creation throttling.",
    log_scale=True,
    tuned=True,
)
_THREAD_POOL_MAX_THREADS = Knob(
    name="thread_pool_max_threads",
    type=KnobType.INT,
    minimum=1,
    maximum=65536,
    default=65536,
    dynamic=True,
    unit="threads",
    description="Upper limit on all pool threads.",
    log_scale=True,
)
_THREAD_POOL_IDLE_TIMEOUT = Knob(
    name="thread_pool_idle_timeout",
    type=KnobType.INT,
    minimum=1,
    maximum=86400,
    default=60,
    dynamic=True,
    unit="s",
    description="Seconds an idle worker waits before it exits.",
    log_scale=True,
)
_THREAD_POOL_PRIO_KICKUP_TIMER = Knob(
    name="thread_pool_prio_kickup_timer",
    type=KnobType.INT,
    minimum=0,
    maximum=3_600_000,
    default=1000,
    dynamic=True,
    unit="ms",
    description="Time a statement waits in the low-priority queue before it is moved up.",
)

MARIADB: Mapping[str, Knob] = _catalog(
    _THREAD_POOL_SIZE,
    _THREAD_POOL_OVERSUBSCRIBE,
    _THREAD_POOL_STALL_LIMIT,
    _THREAD_POOL_MAX_THREADS,
    _THREAD_POOL_IDLE_TIMEOUT,
    _THREAD_POOL_PRIO_KICKUP_TIMER,
)

PERCONA: Mapping[str, Knob] = _catalog(
    _THREAD_POOL_SIZE,
    _THREAD_POOL_OVERSUBSCRIBE,
    _THREAD_POOL_STALL_LIMIT,
    Knob(
        name="thread_pool_max_threads",
        type=KnobType.INT,
        minimum=1,
        maximum=100000,
        default=100000,
        dynamic=True,
        unit="threads",
        description="Upper limit on all pool threads.",
        log_scale=True,
    ),
    _THREAD_POOL_IDLE_TIMEOUT,
    Knob(
        name="thread_pool_high_prio_tickets",
        type=KnobType.INT,
        minimum=0,
        maximum=4_294_967_295,
        default=4_294_967_295,
        dynamic=True,
        unit="tickets",
        description="How many times a connection may use the high-priority queue in a row.",
    ),
)

PGBOUNCER: Mapping[str, Knob] = _catalog(
    Knob(
        name="default_pool_size",
        type=KnobType.INT,
        minimum=1,
        maximum=10000,
        default=20,
        dynamic=True,
        unit="server connections",
        description="Server connections per (user, database) pair: PgBouncer's pool size.",
        log_scale=True,
        tuned=True,
    ),
    Knob(
        name="min_pool_size",
        type=KnobType.INT,
        minimum=0,
        maximum=10000,
        default=0,
        dynamic=True,
        unit="server connections",
        description="Keep at least this many server connections open.",
    ),
    Knob(
        name="reserve_pool_size",
        type=KnobType.INT,
        minimum=0,
        maximum=10000,
        default=0,
        dynamic=True,
        unit="server connections",
        description="Extra connections allowed when a client waited reserve_pool_timeout.",
        tuned=True,
    ),
    Knob(
        name="reserve_pool_timeout",
        type=KnobType.INT,
        minimum=0,
        maximum=3600,
        default=5,
        dynamic=True,
        unit="s",
        description="Wait before the reserve pool is used.",
    ),
    Knob(
        name="max_db_connections",
        type=KnobType.INT,
        minimum=0,
        maximum=100000,
        default=0,
        dynamic=True,
        unit="server connections",
        description="Cap per database over all users (0 = unlimited).",
    ),
)

CATALOGS: Mapping[Engine, Mapping[str, Knob]] = MappingProxyType(
    {Engine.MARIADB: MARIADB, Engine.PERCONA: PERCONA, Engine.PGBOUNCER: PGBOUNCER}
)

#: The knob that sets the pool size, per engine: the one the climber moves first.
POOL_SIZE_KNOB: Mapping[Engine, str] = MappingProxyType(
    {
        Engine.MARIADB: "thread_pool_size",
        Engine.PERCONA: "thread_pool_size",
        Engine.PGBOUNCER: "default_pool_size",
    }
)


class UnknownKnobError(ValueError):
    pass


def catalog(engine: Engine | str) -> Mapping[str, Knob]:
    """The catalog of ``engine``; raises ``ValueError`` naming the known engines."""
    try:
        return CATALOGS[Engine(engine)]
    except ValueError:
        known = ", ".join(e.value for e in Engine)
        raise ValueError(f"unknown engine {engine!r}; known engines: {known}") from None


def knob(engine: Engine | str, name: str) -> Knob:
    knobs = catalog(engine)
    try:
        return knobs[name]
    except KeyError:
        raise UnknownKnobError(
            f"{name!r} is not a knob of {Engine(engine).value}; known: {', '.join(knobs)}"
        ) from None


def tuned_knobs(engine: Engine | str) -> list[Knob]:
    """The knobs the climber tunes, pool size first."""
    engine = Engine(engine)
    size = POOL_SIZE_KNOB[engine]
    knobs = [k for k in catalog(engine).values() if k.tuned]
    return sorted(knobs, key=lambda k: k.name != size)


def default_tuple(engine: Engine | str, cpu_count: int) -> dict[str, int]:
    """The engine's default values of the tuned knobs on a host with ``cpu_count`` CPUs."""
    return {k.name: k.default_for(cpu_count) for k in tuned_knobs(engine)}
