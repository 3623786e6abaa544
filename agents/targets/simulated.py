"""A target backed by the queueing simulator (:mod:`agents.sim`): the agent end to end
without a database, for tests, demos, benchmarks and ``pooltune-agent run`` with a
``[target.simulated]`` table.

Every :meth:`SimulatedTarget.read_counters` is the next 2-second sample of the simulated
server at the tuple in force; :attr:`SimulatedTarget.now` advances by 2 s per read and is
the clock to give the loop, so a fleet of agents runs without sleeping. The snapshot
carries the counters the MariaDB target reads; how they map to the profile's fields:
docs/profile.md, "The simulated target".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from agents import knobs as knob_catalog
from agents.knobs import Engine
from agents.sim import SAMPLE_SECONDS, NoiseConfig, SimSample, SimServer, SimWorkload
from agents.sim.curves import WorkloadCurve
from agents.sim.workloads import random_workload
from agents.targets.base import KnobApplyError, Snapshot, TargetInfo
from agents.wire import HostFacts

SIMULATED_VERSION = "10.11-simulated"
#: Memory reported in the host facts (the simulator has no notion of it).
_MEMORY_PER_CORE = 4 * 2**30


class SimulatedTarget:
    """A simulated MariaDB with the thread pool; see the module docstring."""

    #: Its snapshots carry MariaDB's counters whatever ``engine`` it stands for.
    counters_engine = Engine.MARIADB

    def __init__(
        self,
        server: SimServer,
        *,
        engine: Engine = Engine.MARIADB,
        hostname: str = "simulated",
    ) -> None:
        self.server = server
        self.engine = engine
        self.hostname = hostname
        self.knobs = knob_catalog.default_tuple(engine, server.curve.cores)
        self.now = 0.0
        self.knob_changes = 0
        #: The last 2-second sample, with the noise-free truth (for scoring).
        self.last_sample: SimSample | None = None
        self._counters: dict[str, float] = {
            "Questions": 0.0,
            "Com_commit": 0.0,
            "Com_rollback": 0.0,
            "Com_select": 0.0,
            "Com_update": 0.0,
            "Innodb_row_lock_waits": 0.0,
            "agent_statements": 0.0,
            "agent_selects": 0.0,
        }
        self._latency_count = 0.0
        self._latency_total_s = 0.0
        self._cpu_seconds = 0.0

    @classmethod
    def from_settings(
        cls,
        *,
        engine: Engine,
        seed: int,
        workload: str | None = None,
        cores: int | None = None,
        connections: int | None = None,
        params: Mapping[str, float] | None = None,
        noise_cv: float | None = None,
        hostname: str = "",
    ) -> SimulatedTarget:
        """The target a ``[target.simulated]`` table describes: a :func:`random_workload`
        of family ``workload`` (random when unset) drawn from ``seed``, with any
        :class:`SimWorkload` field overridden by ``params``."""
        rng = np.random.default_rng(seed)
        drawn = random_workload(rng, kind=workload, cores=cores, connections=connections)
        if params:
            known = {f.name for f in dataclasses.fields(SimWorkload)} - {"name"}
            unknown = sorted(set(params) - known)
            if unknown:
                raise ValueError(
                    f"unknown simulated workload parameter(s) {', '.join(unknown)}; "
                    f"known: {', '.join(sorted(known))}"
                )
            overrides: dict[str, Any] = {
                name: int(value) if name in {"cores", "connections", "max_size"} else value
                for name, value in params.items()
            }
            drawn = dataclasses.replace(drawn, **overrides)
        noise = NoiseConfig() if noise_cv is None else NoiseConfig(cv=noise_cv)
        server = SimServer(drawn, seed=int(rng.integers(2**31)), noise=noise)
        return cls(server, engine=engine, hostname=hostname or f"simulated-{seed}")

    def connect(self) -> None:
        pass

    def close(self) -> None:
        pass

    def check(self, *, read_only: bool = False) -> TargetInfo:
        return TargetInfo(
            engine=self.engine,
            version=SIMULATED_VERSION,
            thread_handling="pool-of-threads",
            via_extra_port=True,
            latency_available=True,
            server_pid=None,
        )

    def host_facts(self) -> HostFacts:
        cores = self.server.curve.cores
        return HostFacts(
            hostname=self.hostname,
            engine=self.engine,
            engine_version=SIMULATED_VERSION,
            cpu_count=cores,
            memory_bytes=cores * _MEMORY_PER_CORE,
        )

    def read_counters(self) -> Snapshot:
        sample = self.server.sample(self.knobs)
        self.last_sample = sample
        seconds = SAMPLE_SECONDS
        self.now += seconds
        curve = self.server.curve
        rounds, write_fraction, think_s, lock_conflict = 1.0, 0.0, 0.0, 0.0
        cpu_ms: float | None = None
        sync_ms = 0.0
        if isinstance(curve, WorkloadCurve):
            workload = curve.workload
            rounds = workload.rounds
            write_fraction = workload.write_fraction
            think_s = workload.think_ms / 1000.0
            lock_conflict = workload.lock_conflict
            cpu_ms = workload.cpu_ms
            sync_ms = workload.sync_ms_per_round(self.knobs)
        transactions = sample.throughput * seconds
        statements = transactions * rounds
        counters = self._counters
        counters["Com_commit"] += transactions
        counters["Questions"] += statements
        counters["Com_select"] += statements * (1.0 - write_fraction)
        counters["Com_update"] += statements * write_fraction
        counters["Innodb_row_lock_waits"] += statements * lock_conflict
        connections = float(sample.connections)
        if isinstance(curve, WorkloadCurve):
            # The pool's gauges are counts the server keeps (threads executing, requests
            # queued): over an interval they average to the model's occupancy at the tuple
            # in force, which keeps Little's law with the sample's throughput and latency
            # (docs/profile.md, "The simulated target").
            _, executing, queued = curve.workload.occupancy(self.knobs)
            executing = min(connections, executing)
            active = min(connections, executing + queued)
            # The server-side histogram times a statement's execution, not its time queued
            # in the pool: Little's law on the requests executing, per statement.
            executing_s = executing * seconds
        else:
            # Clients not thinking are executing (Little's law); no pool model to queue them.
            active = min(connections, max(0.0, connections - sample.throughput * think_s))
            executing = active
            executing_s = transactions * sample.latency_ms / 1000.0
        self._latency_count += statements
        self._latency_total_s += executing_s
        if cpu_ms is not None:
            self._cpu_seconds += statements * cpu_ms / 1000.0
            # Counted only for a modelled workload: a bare curve has no contention to time.
            synchronising_s = statements * sync_ms / 1000.0
            counters["sync_wait_s"] = counters.get("sync_wait_s", 0.0) + synchronising_s
        return Snapshot(
            taken_at=self.now,
            uptime_s=self.now + 1000.0,
            counters=dict(counters),
            gauges={
                "tp_connections": connections,
                "tp_active_threads": executing,
                "tp_queue_length": active - executing,
            },
            cpu_seconds=self._cpu_seconds if cpu_ms is not None else None,
            latency_count=self._latency_count,
            latency_total_s=self._latency_total_s,
        )

    def expected_throughput(self) -> float:
        """Noise-free throughput of the tuple in force (scoring only)."""
        return self.server.expected_throughput(self.knobs)

    def current_tuple(self, names: list[str]) -> dict[str, int]:
        return {name: self.knobs[name] for name in names}

    def apply(self, values: Mapping[str, int]) -> dict[str, int]:
        for name, value in values.items():
            knob = knob_catalog.knob(self.engine, name)
            if not knob.contains(int(value)):
                raise KnobApplyError(f"{name}={value} is outside [{knob.minimum}, {knob.maximum}]")
        self.knobs.update({name: int(value) for name, value in values.items()})
        self.knob_changes += 1
        return {name: self.knobs[name] for name in values}
