"""One database's pool of a PgBouncer as a target of its own, so the engine-neutral agent loop
climbs it unchanged.

The view's only knob is the engine's pool size knob, ``default_pool_size``, standing for
the database's own ``pool_size`` (read and changed in the ini by the shared
:class:`~agents.targets.pgbouncer.PgBouncerTarget`, under the pool budget). Its snapshots are
the shared target's with the throughput counters, the latency, the client gauges and the
sampled backends' states (the lock signal among them) of that database only
(:func:`pool_snapshot`): the climb follows the pool's own transactions and lock waits. The
other PostgreSQL figures (CPU, WAL) stay the server's: the pools share it. See
docs/pgbouncer.md, "Several pools".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from agents import knobs as knob_catalog
from agents.collectors import CollectorSet
from agents.knobs import Engine
from agents.pgbouncer.collectors import ACTIVITY_KINDS, PER_DATABASE_COUNTERS, activity_counter
from agents.targets.base import KnobApplyError, Snapshot, TargetInfo
from agents.targets.pgbouncer import PgBouncerTarget
from agents.wire import HostFacts

#: The view's knob.
SIZE = knob_catalog.POOL_SIZE_KNOB[Engine.PGBOUNCER]
#: Per-pool gauges of SHOW POOLS (``pgb_<column>@<database>/<user>``) summed per database.
_POOL_GAUGES = ("cl_active", "cl_waiting", "sv_active")


def pool_snapshot(snapshot: Snapshot, database: str) -> Snapshot:
    """``snapshot`` as one pool's: its transactions, queries, transaction and wait times,
    latency totals, clients (active, waiting) and, where SHOW SERVERS told them apart, its
    sampled backends' states are ``database``'s."""
    counters = dict(snapshot.counters)
    for name in PER_DATABASE_COUNTERS:
        counters[name] = snapshot.counters.get(f"{name}@{database}", 0.0)
    if activity_counter("samples", database) in snapshot.counters:
        for kind in ACTIVITY_KINDS:
            counters[activity_counter(kind)] = snapshot.counters.get(
                activity_counter(kind, database), 0.0
            )
    gauges = dict(snapshot.gauges)
    pools = 0
    for column in _POOL_GAUGES:
        prefix = f"pgb_{column}@{database}/"
        values = [value for name, value in snapshot.gauges.items() if name.startswith(prefix)]
        gauges[f"pgb_{column}"] = sum(values)
        pools = max(pools, len(values))
    gauges["pgb_clients"] = gauges["pgb_cl_active"] + gauges["pgb_cl_waiting"]
    gauges["pgb_pools"] = float(pools)
    return dataclasses.replace(
        snapshot,
        counters=counters,
        gauges=gauges,
        latency_count=counters["pgb_xact_count"],
        latency_total_s=counters["pgb_xact_time_s"],
    )


class SharedReads:
    """One read of the shared target per round, whichever views ask for it: the views of
    one round see the same moment, and PostgreSQL is sampled once."""

    def __init__(self, target: PgBouncerTarget) -> None:
        self.target = target
        self._snapshot: Snapshot | None = None

    def new_round(self) -> None:
        self._snapshot = None

    def read(self) -> Snapshot:
        if self._snapshot is None:
            self._snapshot = self.target.read_counters()
        return self._snapshot


class PoolView:
    """The pool of ``database`` (see the module docstring). The shared target's connections
    belong to whoever made it (:class:`~agents.pgbouncer.rotation.PoolRotation`); they
    reopen on demand, so :meth:`connect` and :meth:`close` leave them alone."""

    engine = Engine.PGBOUNCER

    def __init__(self, shared: PgBouncerTarget, database: str, reads: SharedReads) -> None:
        self.shared = shared
        self.database = database
        self.reads = reads

    @property
    def collector_stats(self) -> CollectorSet:
        return self.shared.collector_stats

    def connect(self) -> None:
        """Nothing: the shared target is connected by its owner."""

    def close(self) -> None:
        """Nothing: the shared target is closed by its owner."""

    def check(self, *, read_only: bool = False) -> TargetInfo:
        """The shared target's check, without its notes (its owner logs them once)."""
        info = self.shared.check(read_only=read_only)
        return dataclasses.replace(info, notes=())

    def host_facts(self) -> HostFacts:
        return self.shared.host_facts()

    def read_counters(self) -> Snapshot:
        return pool_snapshot(self.reads.read(), self.database)

    def _only_size(self, names: Iterable[str]) -> None:
        other = sorted(name for name in names if name != SIZE)
        if other:
            raise KnobApplyError(
                f"pool {self.database}: only {SIZE} (its pool_size) is tuned per pool, "
                f"not {', '.join(other)}"
            )

    def current_tuple(self, names: list[str]) -> dict[str, int]:
        self._only_size(names)
        return {SIZE: self.shared.pool_sizes()[self.database]} if names else {}

    def apply(self, values: Mapping[str, int]) -> dict[str, int]:
        """Set the pool's own size (under the pool budget) and read it back."""
        self._only_size(values)
        in_force = self.shared.apply_pool_sizes({self.database: int(values[SIZE])})
        return {SIZE: in_force[self.database]}

    def own_size(self) -> int | None:
        """The database's own ``pool_size`` in the ini (None: it follows the default)."""
        return self.shared.own_pool_sizes()[self.database]

    def restore(self, values: Mapping[str, int | None]) -> dict[str, int | None]:
        """Put back a saved own size (``None`` removes the option), budget or not."""
        self._only_size(values)
        self.shared.apply_pool_sizes({self.database: values[SIZE]}, check_budget=False)
        return {SIZE: self.own_size()}
