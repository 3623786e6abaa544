"""What every climber shares: the sample it is fed, the knob space, events, the interface.

A climber is a pure object: :meth:`Climber.step` takes one ~2-second :class:`Sample` and
answers the full knob tuple to apply next. It has no I/O, no clock and no global random
state, so the agent, the tests and the benchmark drive it the same way, thousands of
samples per second. The climbers and how they work: docs/climber.md.
"""

from __future__ import annotations

import abc
import dataclasses
import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agents import knobs as knob_catalog
from agents.knobs import Engine, Knob


@dataclass(frozen=True, slots=True)
class Sample:
    """One sample of the server: throughput per second over ~2 s and what was in force."""

    throughput: float
    connections: int
    latency_ms: float | None
    #: The knob values actually in force, read back from the server.
    knobs: dict[str, int]
    #: CPU cores the server process used over the sample (None when the agent cannot read
    #: the server's CPU time, e.g. when it runs on another host).
    cpu_busy: float | None = None
    #: CPU cores busy on the server's host over the sample, every process counted (None
    #: when the agent cannot read them, e.g. for a remote server). A pooler, an application
    #: or a co-tenant on the same host can leave no CPU for more server threads even where
    #: the server's own use looks modest (docs/climber.md, "Search", the far end).
    host_cpu_busy: float | None = None
    #: The target saw the server stall during the sample (MariaDB: the thread pool's stall
    #: counter rose, or a group was stalled); None when the target cannot tell. The climber
    #: sets a stalled sample aside when it is an outlier of its tuple (docs/climber.md).
    stalled: bool | None = None
    #: The target saw the last change still taking effect (PgBouncer: a pool opening server
    #: connections while clients wait for them); None when the target cannot tell. The
    #: climber discards such samples after a change, a bounded number (docs/climber.md).
    settling: bool | None = None
    #: How much statements queued on row locks over the sample (MariaDB:
    #: ``Innodb_row_lock_waits`` per client statement; PgBouncer: the share of the pools'
    #: backends in a transaction waiting on a lock); None when the target cannot tell. Where
    #: statements queue on row locks, CPU use need not be useful work and more connections
    #: only add waiters (docs/climber.md, "Search").
    lock_waits: float | None = None


@dataclass(frozen=True, slots=True)
class KnobDim:
    """One knob the climber may move: its catalog entry narrowed to the bounds in force, so
    values are rounded and clipped by the catalog's own rule (:meth:`Knob.clip`)."""

    knob: Knob
    default: int

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise ValueError(f"{self.name}: low {self.low} is above high {self.high}")

    @classmethod
    def within(cls, knob: Knob, low: int, high: int, cpu_count: int) -> KnobDim:
        """``knob`` narrowed to [low, high], its default (on ``cpu_count`` CPUs) clipped in."""
        narrowed = dataclasses.replace(knob, minimum=low, maximum=high)
        return cls(narrowed, narrowed.clip(knob.default_for(cpu_count)))

    @property
    def name(self) -> str:
        return self.knob.name

    @property
    def low(self) -> int:
        return self.knob.minimum

    @property
    def high(self) -> int:
        return self.knob.maximum

    @property
    def log_scale(self) -> bool:
        return self.knob.log_scale

    def clip(self, value: float) -> int:
        return self.knob.clip(value)

    def to_unit(self, value: float) -> float:
        """Coordinate the climber searches in: log2 for log-scale knobs."""
        return math.log2(max(value, 1e-9)) if self.log_scale else float(value)

    def from_unit(self, coordinate: float) -> int:
        return self.clip(2.0**coordinate if self.log_scale else coordinate)


@dataclass(frozen=True, slots=True)
class KnobSpace:
    """The knobs a climber tunes, pool size first."""

    dims: tuple[KnobDim, ...]

    def __post_init__(self) -> None:
        if not self.dims:
            raise ValueError("a knob space needs at least the pool size")

    @classmethod
    def from_engine(
        cls,
        engine: Engine | str,
        cpu_count: int,
        *,
        bounds: Mapping[str, tuple[int, int]] | None = None,
        names: Sequence[str] | None = None,
    ) -> KnobSpace:
        """The tuned knobs of ``engine`` (or ``names``), inside the catalog's bounds and
        the operator's hard ``bounds`` (which must lie inside the catalog's)."""
        catalog = knob_catalog.catalog(engine)
        chosen = (
            [catalog[name] for name in names]
            if names is not None
            else knob_catalog.tuned_knobs(engine)
        )
        size_name = knob_catalog.POOL_SIZE_KNOB[Engine(engine)]
        chosen.sort(key=lambda k: k.name != size_name)
        dims = []
        for knob in chosen:
            low, high = knob.minimum, knob.maximum
            if bounds and knob.name in bounds:
                low, high = max(low, bounds[knob.name][0]), min(high, bounds[knob.name][1])
            dims.append(KnobDim.within(knob, low, high, cpu_count))
        return cls(tuple(dims))

    @property
    def size(self) -> KnobDim:
        return self.dims[0]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dims)

    def defaults(self) -> dict[str, int]:
        return {d.name: d.default for d in self.dims}

    def clip(self, knobs: Mapping[str, int]) -> dict[str, int]:
        """A full tuple: every dimension, clipped; missing ones take their default."""
        return {d.name: d.clip(knobs.get(d.name, d.default)) for d in self.dims}


class EventKind(enum.StrEnum):
    #: Started again from scratch (reason says why).
    REINIT = "reinit"
    #: The workload changed (detected by the climber).
    WORKLOAD_CHANGE = "workload-change"
    #: Went back to the last good tuple after a sharp sustained drop.
    ROLLBACK = "rollback"
    #: Someone else changed a knob.
    MANUAL_CHANGE = "manual-change"
    CONVERGED = "converged"
    SUSPENDED = "suspended"
    RESUMED = "resumed"
    #: A guard changed or refused the tuple the algorithm wanted.
    GUARD = "guard"


#: Events that throw away what the climber learnt: counted as restarts.
RESTART_EVENTS = frozenset({EventKind.REINIT, EventKind.WORKLOAD_CHANGE})


@dataclass(frozen=True, slots=True)
class ClimberEvent:
    step: int
    kind: EventKind
    reason: str
    knobs: dict[str, int] = field(default_factory=dict)


class Climber(abc.ABC):
    """The interface the agent drives: ``reset`` once, then ``step`` per sample."""

    name: str = "abstract"

    def __init__(self, space: KnobSpace, cpu_count: int) -> None:
        self.space = space
        self.cpu_count = max(1, cpu_count)
        self.events: list[ClimberEvent] = []
        self.steps = 0
        self._current: dict[str, int] = space.defaults()
        self._best: dict[str, int] = dict(self._current)

    # -------------------------------------------------------------- interface
    @abc.abstractmethod
    def reset(
        self,
        start: Mapping[str, int],
        *,
        plausible_range: Mapping[str, tuple[int, int]] | None = None,
    ) -> None:
        """Start climbing from ``start`` (already applied by the caller)."""

    @abc.abstractmethod
    def step(self, sample: Sample) -> dict[str, int]:
        """Feed one sample; return the full tuple to apply next."""

    @property
    @abc.abstractmethod
    def state(self) -> str: ...

    @property
    @abc.abstractmethod
    def converged(self) -> bool: ...

    @property
    def best_tuple(self) -> dict[str, int]:
        return dict(self._best)

    @property
    def current_tuple(self) -> dict[str, int]:
        return dict(self._current)

    def settings(self) -> dict[str, float | int | str | bool | None]:
        """The climber's configuration, flat, for reports (``ClimberInfo.settings``)."""
        config = getattr(self, "config", None)
        if config is None or not dataclasses.is_dataclass(config) or isinstance(config, type):
            return {}
        flat: dict[str, float | int | str | bool | None] = {}
        for key, value in dataclasses.asdict(config).items():
            if isinstance(value, dict):
                flat.update({f"{key}.{inner}": item for inner, item in value.items()})
            elif isinstance(value, list | tuple):
                flat[key] = ",".join(str(item) for item in value)
            else:
                flat[key] = value
        return flat

    # -------------------------------------------------------------- helpers
    def _event(self, kind: EventKind, reason: str) -> None:
        self.events.append(ClimberEvent(self.steps, kind, reason, dict(self._current)))

    def restarts(self) -> int:
        return sum(1 for e in self.events if e.kind in RESTART_EVENTS)
