"""Several PgBouncer pools, climbed in turn: one agent loop per pool, one turn at a time.

With ``[target.pgbouncer] pools``, every listed database gets its own
:class:`~agents.loop.AgentLoop` over a :class:`~agents.pgbouncer.view.PoolView` (its
``pool_size`` as the knob, its own transactions as the throughput). :class:`PoolRotation`
iterates one loop at a time — the pool whose turn it is — so the other pools hold still
while one climbs, and the pool budget leaves the climbing pool a fixed ceiling, given it
as the upper bound of that turn (:meth:`~agents.pgbouncer.budget.PoolBudget.largest_pool_size`).
A turn ends when the loop holds (or is paused by a DBA), or when a pool without load kept
profiling too long. When every pool holds, each is watched every sample, and the first that
sees its workload change takes the next turn.

All pools share one state file: :class:`PoolEntry` is one pool's part of it, saved before
that pool's first change with the pool's *own* size (``None`` when it followed the
default), and every pool is restored at once, at start and at stop (restoring one pool
at a time could break the budget half way). Details: docs/pgbouncer.md, "Several pools".
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agents.config import AgentConfig, reload_config
from agents.knobs import Engine
from agents.loop import AgentLoop, Phase
from agents.periodic import PeriodicLoop
from agents.pgbouncer.saved import pool_key
from agents.pgbouncer.view import SIZE, PoolView, SharedReads
from agents.state import (
    OriginalTupleFile,
    SavedTuple,
    StatusFile,
    restore_original_retrying,
    take_over,
)
from agents.status import Counters
from agents.targets.base import (
    KnobApplyError,
    Target,
    TargetMisconfigured,
    TargetUnavailable,
)
from agents.targets.pgbouncer import PgBouncerTarget

logger = logging.getLogger(__name__)

#: Builds the agent loop of one pool from its configuration and its view.
LoopFactory = Callable[[AgentConfig, Target], AgentLoop]
#: Phases after which a pool's turn is over.
SETTLED = frozenset({Phase.HOLDING, Phase.PAUSED})


class PoolEntry(OriginalTupleFile):
    """One pool's part of the shared state file, as its loop sees it: the loop's tuple
    ``{default_pool_size: …}`` ↔ ``pool_size@<database>`` in the file, holding the pool's
    own size (``None``: it followed the default), read from the ini when saved."""

    def __init__(self, path: Path, view: PoolView) -> None:
        super().__init__(path)
        self.view = view
        self.key = pool_key(view.database)

    def _entries(self) -> tuple[Engine, dict[str, int | None]]:
        saved = super().load()
        if saved is None:
            return Engine.PGBOUNCER, {}
        return saved.engine, dict(saved.values)

    def _on_disk(self) -> bool:
        return self.key in self._entries()[1]

    def save(self, engine: Engine, values: Mapping[str, int | None]) -> None:
        """Save the pool's own size now (``values``, its size in force, may be the default
        it follows)."""
        _, entries = self._entries()
        entries[self.key] = self.view.own_size()
        super().save(engine, entries)

    def load(self) -> SavedTuple | None:
        saved = super().load()
        if saved is None or self.key not in saved.values:
            return None
        return dataclasses.replace(saved, values={SIZE: saved.values[self.key]})

    def adopt(self, values: Mapping[str, int | None]) -> bool:
        """A DBA changed the pool: what to put back is its own size now (the base class
        holds it in memory when the disk refuses)."""
        if SIZE not in values or not self._on_disk():
            return True
        return super().adopt({SIZE: self.view.own_size()})

    def clear(self) -> None:
        engine, entries = self._entries()
        entries.pop(self.key, None)
        if entries:
            super().save(engine, entries)
        else:
            super().clear()


def pool_config(config: AgentConfig, database: str, *, ceiling: int | None = None) -> AgentConfig:
    """The configuration of one pool's loop: its knob only, bounded by ``ceiling`` (the
    budget's) as well as ``[bounds]``, its status file under ``state_dir/pools/<database>``."""
    low, high = config.knob_bounds(SIZE)
    if ceiling is not None:
        high = max(low, min(high, ceiling))
    return config.model_copy(
        update={
            "bounds": {SIZE: (low, high)},
            "climber": config.climber.model_copy(update={"knobs": [SIZE]}),
            "agent": config.agent.model_copy(
                update={"state_dir": config.agent.state_dir / "pools" / database}
            ),
        }
    )


class PoolRotation(PeriodicLoop):
    """Climbs ``[target.pgbouncer] pools`` in turn (see the module docstring)."""

    expected_errors = (TargetUnavailable, KnobApplyError)
    fatal_errors = (TargetMisconfigured,)

    def __init__(
        self,
        config: AgentConfig,
        *,
        target: PgBouncerTarget,
        make_loop: LoopFactory,
        stop: threading.Event | None = None,
        clock: Callable[[], float] = time.monotonic,
        config_loader: Callable[[], AgentConfig] | None = None,
    ) -> None:
        super().__init__(stop=stop, clock=clock, counters=Counters())
        if not config.target.pgbouncer.pools:
            raise ValueError("a pool rotation needs [target.pgbouncer] pools")
        self.config = config
        self.target = target
        self.config_loader = config_loader
        self.original = OriginalTupleFile(config.state_file)
        self.status_file = StatusFile(config.status_file)
        self.reads = SharedReads(target)
        self.loops: dict[str, AgentLoop] = {}
        for database in config.target.pgbouncer.pools:
            view = PoolView(target, database, self.reads)
            loop = make_loop(pool_config(config, database), view)
            loop.original = PoolEntry(config.state_file, view)
            self.loops[database] = loop
        self.active: str | None = None
        self.stopped = False
        self._turn_started = 0.0
        #: Pools whose turn ended without load, left out until every other pool was watched.
        self._resting: set[str] = set()
        #: Pools the budget left no room (warned about once).
        self._no_room: set[str] = set()
        self._last_turn: str | None = None

    @property
    def period_s(self) -> float:
        return self.config.agent.sample_period_s

    @property
    def idle_turn_s(self) -> float:
        """How long a pool may keep profiling in its turn: a loaded one has a profile by
        then (``profile_max_window_s``), so one still profiling has no load."""
        agent = self.config.agent
        return agent.profile_longest_window_s + 5 * agent.sample_period_s

    # -- start and stop -------------------------------------------------------------------

    def start(self) -> None:
        """Restore every pool a crash left changed (at once), check, start each pool's loop."""
        take_over(self.target, self.original, what="pool sizes")
        for loop in self.loops.values():
            loop.start()
        logger.info("climbing the pools %s in turn", ", ".join(self.loops))

    def shutdown(self) -> None:
        """Put every pool back at once (several tries), then close the connections."""
        self.stopped = True
        restore_original_retrying(self.target, self.original)
        for loop in self.loops.values():
            loop.phase = Phase.STOPPED
        self._write_status()
        self.target.close()

    def _reload(self) -> None:
        if self.config_loader is None:
            return
        new = reload_config(self.config, self.config_loader)
        if new is None:
            return
        if new.target.pgbouncer.pools != self.config.target.pgbouncer.pools:
            logger.warning("[target.pgbouncer] pools changes take effect after a restart")
        self.config = new
        for database, loop in self.loops.items():
            ceiling = loop.config.knob_bounds(SIZE)[1]
            loop.config_loader = _constant(pool_config(new, database, ceiling=ceiling))
            loop._reload()  # each loop applies what changed for it (bounds, climber, …)

    # -- one round ------------------------------------------------------------------------

    def _iterate(self) -> None:
        self.reads.new_round()
        if self.active is None:
            self.active = self._next_turn()
            if self.active is None:
                self._watch()
                return
        database = self.active
        loop = self.loops[database]
        loop.iterate()
        if loop.phase in SETTLED:
            logger.info("pool %s: turn over (%s)", database, loop.phase.value)
        elif loop.phase is Phase.PROFILING and self.clock() - self._turn_started > self.idle_turn_s:
            logger.info("pool %s: no load to tune; the next pool's turn", database)
            self._resting.add(database)
        else:
            return
        self.active = self._next_turn()

    def _next_turn(self) -> str | None:
        """The first pool after the last turn's (in the configured order) whose loop is
        not settled and not resting."""
        order = list(self.loops)
        if self._last_turn in order:
            start = order.index(self._last_turn) + 1
            order = order[start:] + order[:start]
        for database in order:
            loop = self.loops[database]
            if loop.phase not in SETTLED and database not in self._resting:
                if self._begin_turn(database):
                    return database
        return None

    def _watch(self) -> None:
        """Every pool holds or rests: one sample for each holding one; the first whose
        workload changed takes the next turn. The resting pools get a turn again after."""
        for database, loop in self.loops.items():
            if database in self._resting:
                continue
            loop.iterate()
            if loop.phase not in SETTLED and self._begin_turn(database):
                self.active = database
                break
        self._resting.clear()

    def _begin_turn(self, database: str) -> bool:
        """Give ``database`` the budget's ceiling as its upper bound; False (logged) when
        not even its lower bound fits."""
        low, high = self.config.knob_bounds(SIZE)
        plans = self.target.pool_state().plans()
        ceiling, why = self.target.budget().largest_pool_size(plans, database, most=high)
        if ceiling < low:
            if database not in self._no_room:
                logger.warning(
                    "pool %s cannot climb: no size from its lower bound %d keeps the rule (%s)",
                    database,
                    low,
                    why,
                )
            self._no_room.add(database)
            self._resting.add(database)
            return False
        self._no_room.discard(database)
        self._last_turn = database
        loop = self.loops[database]
        loop.config = pool_config(self.config, database, ceiling=ceiling)
        if why is not None:
            logger.info(
                "pool %s: its turn, sizes up to %d (larger ones break the rule: %s)",
                database,
                ceiling,
                why,
            )
        else:
            logger.info("pool %s: its turn, sizes up to %d", database, ceiling)
        self._turn_started = self.clock()
        return True

    # -- status ---------------------------------------------------------------------------

    def _after_iteration(self) -> None:
        self._write_status()

    def status(self) -> dict[str, Any]:
        saved: dict[str, int | None] | str | None
        try:
            original = self.original.load()
            saved = original.values if original else None
        except Exception:  # status must never fail the loop
            saved = "unreadable"
        if self.stopped:
            phase = Phase.STOPPED.value
        elif self.active is not None:
            phase = f"{self.loops[self.active].phase.value} {self.active}"
        elif all(loop.phase in SETTLED for loop in self.loops.values()):
            phase = "watching"
        else:
            phase = "waiting for load"
        return {
            "phase": phase,
            "active_pool": self.active,
            "original_tuple": saved,
            "pools": {database: loop.status() for database, loop in self.loops.items()},
            "counters": dataclasses.asdict(self.counters),
        }

    def _write_status(self) -> None:
        try:
            self.status_file.write(self.status())
        except OSError as exc:
            logger.warning("cannot write the status file: %s", exc)


def _constant(config: AgentConfig) -> Callable[[], AgentConfig]:
    return lambda: config
