"""A target backed by the queueing simulator (:mod:`agents.sim`): the agent end to end
without a database, for tests, demos and benchmarks.

Every :meth:`SimulatedTarget.read_counters` is the next 2-second sample of the simulated
server at the tuple in force; the snapshot carries the same counters the MariaDB target
reads (``Questions``, ``Com_commit``, the pool's connections, the latency histogram
totals and the server's CPU seconds), so the profile and the loop cannot tell the
difference. Time is simulated: :attr:`SimulatedTarget.now` is the clock to give the loop.
"""

from __future__ import annotations

from collections.abc import Mapping

from agents import knobs as knob_catalog
from agents.knobs import Engine
from agents.sim import SAMPLE_SECONDS, SimServer, SimWorkload
from agents.sim.curves import WorkloadCurve
from agents.targets.base import KnobApplyError, Snapshot, TargetInfo
from agents.wire import HostFacts


class SimulatedTarget:
    """A simulated MariaDB with the thread pool; see the module docstring."""

    def __init__(self, server: SimServer, *, engine: Engine = Engine.MARIADB) -> None:
        self.server = server
        self.engine = engine
        self.knobs = knob_catalog.default_tuple(engine, server.curve.cores)
        self.now = 0.0
        self.knob_changes = 0
        self._counters: dict[str, float] = {
            "Questions": 0.0,
            "Com_commit": 0.0,
            "Com_rollback": 0.0,
            "Com_select": 0.0,
            "Com_update": 0.0,
            "agent_statements": 0.0,
            "agent_selects": 0.0,
        }
        self._latency_count = 0.0
        self._latency_total_s = 0.0
        self._cpu_seconds = 0.0

    @classmethod
    def for_workload(cls, workload: SimWorkload, *, seed: int) -> SimulatedTarget:
        return cls(SimServer(workload, seed=seed))

    def connect(self) -> None:
        pass

    def close(self) -> None:
        pass

    def check(self, *, read_only: bool = False) -> TargetInfo:
        return TargetInfo(
            engine=self.engine,
            version="10.11-simulated",
            thread_handling="pool-of-threads",
            via_extra_port=True,
            latency_available=True,
            server_pid=None,
        )

    def host_facts(self) -> HostFacts:
        return HostFacts(
            hostname="simulated",
            engine=self.engine,
            engine_version="10.11-simulated",
            cpu_count=self.server.curve.cores,
            memory_bytes=0,
        )

    def read_counters(self) -> Snapshot:
        sample = self.server.sample(self.knobs)
        seconds = SAMPLE_SECONDS
        self.now += seconds
        curve = self.server.curve
        rounds = 1.0
        write_fraction = 0.0
        cpu_ms = None
        if isinstance(curve, WorkloadCurve):
            rounds = curve.workload.rounds
            write_fraction = curve.workload.write_fraction
            cpu_ms = curve.workload.cpu_ms * rounds
        transactions = sample.throughput * seconds
        statements = transactions * rounds
        counters = self._counters
        counters["Com_commit"] += transactions
        counters["Questions"] += statements
        counters["Com_select"] += statements * (1.0 - write_fraction)
        counters["Com_update"] += statements * write_fraction
        self._latency_count += statements
        self._latency_total_s += statements * sample.latency_ms / 1000.0 / rounds
        if cpu_ms is not None:
            self._cpu_seconds += transactions * cpu_ms / 1000.0
        return Snapshot(
            taken_at=self.now,
            uptime_s=self.now + 1000.0,
            counters=dict(counters),
            gauges={"tp_connections": float(sample.connections)},
            cpu_seconds=self._cpu_seconds if cpu_ms is not None else None,
            latency_count=self._latency_count,
            latency_total_s=self._latency_total_s,
        )

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
