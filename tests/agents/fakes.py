"""In-memory test doubles of a target: a thread-pool server with a known curve."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from agents.knobs import Engine
from agents.targets.base import Snapshot, TargetInfo, TargetUnavailable
from agents.wire import HostFacts


def knee_curve(knobs: Mapping[str, int]) -> float:
    """Throughput rising to a plateau at size 4 (transactions per second)."""
    return 1000.0 * min(knobs.get("thread_pool_size", 1), 4) / 4


@dataclass
class FakeTarget:
    """A server whose counters grow at ``curve(knobs)`` per simulated second.

    Every ``read_counters`` advances the simulated clock by ``period_s``; ``failures``
    holds exceptions to raise from the next reads, one per read.
    """

    knobs: dict[str, int] = field(
        default_factory=lambda: {
            "thread_pool_size": 2,
            "thread_pool_oversubscribe": 3,
            "thread_pool_stall_limit": 500,
        }
    )
    curve: Callable[[Mapping[str, int]], float] = knee_curve
    connections: int = 16
    period_s: float = 2.0
    engine: Engine = Engine.MARIADB
    failures: list[BaseException] = field(default_factory=list)
    applied: list[dict[str, int]] = field(default_factory=list)
    now: float = 1000.0
    transactions: float = 0.0
    uptime: float = 5000.0
    connected: bool = False
    #: Autocommit statements only: Com_commit never moves.
    autocommit: bool = False

    def connect(self) -> None:
        self.connected = True

    def close(self) -> None:
        self.connected = False

    def check(self, *, read_only: bool = False) -> TargetInfo:
        return TargetInfo(
            engine=self.engine,
            version="10.11.19-MariaDB",
            thread_handling="pool-of-threads",
            via_extra_port=True,
            latency_available=False,
            server_pid=None,
        )

    def host_facts(self) -> HostFacts:
        return HostFacts(
            hostname="fake",
            engine=self.engine,
            engine_version="10.11.19",
            cpu_count=2,
            memory_bytes=0,
        )

    def read_counters(self) -> Snapshot:
        if self.failures:
            raise self.failures.pop(0)
        self.now += self.period_s
        self.uptime += self.period_s
        self.transactions += self.curve(self.knobs) * self.period_s
        return Snapshot(
            taken_at=self.now,
            uptime_s=self.uptime,
            counters={
                "Questions": self.transactions * 10,
                "Com_commit": 0.0 if self.autocommit else self.transactions,
                "Com_rollback": 0.0,
                "Com_select": self.transactions * 8,
                "Com_update": self.transactions,
                "agent_statements": 0.0,
                "agent_selects": 0.0,
            },
            gauges={"tp_connections": float(self.connections), "tp_active_threads": 2.0},
        )

    def current_tuple(self, names: list[str]) -> dict[str, int]:
        return {name: self.knobs[name] for name in names}

    def apply(self, values: Mapping[str, int]) -> dict[str, int]:
        self.applied.append(dict(values))
        self.knobs.update(values)
        return {name: self.knobs[name] for name in values}


class FlakyError(TargetUnavailable):
    pass
