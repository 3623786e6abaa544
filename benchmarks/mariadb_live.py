"""The agent on a live MariaDB under sysbench: oracle sweep vs. the agent from the default.

For each case (sysbench workload × client count) on a fresh pool-of-threads MariaDB:

1. Oracle: an exhaustive sweep of fixed ``thread_pool_size`` values, in interleaved
   passes (forward, then backward: A/B/…/B/A) because a single pass is dominated by
   drift; the first 2 s after each change are dropped. The oracle is the best mean.
2. The agent (in-process :class:`agents.loop.AgentLoop`, real climber, no service: the
   local heuristic) starts from the default tuple and runs for ``--agent-seconds``. An
   independent observer measures transactions/s every 2 s over the extra port.

Printed per case: final throughput (mean of the last 60 s) / oracle and / default,
the time to reach 95% of the oracle (first moment after which 90% of the next 30
samples — or of the rest of the run, if shorter — stay at ≥ 95%), the number of knob
changes, and the worst 3-sample mean / the starting throughput (a sustained drop).

Usage::

    python -m benchmarks.mariadb_live                       # the full matrix (about 1 h)
    python -m benchmarks.mariadb_live --quick               # one small case (about 5 min)
    python -m benchmarks.mariadb_live --workloads read_only --clients 32 --agent-seconds 300
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import statistics
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from agents.cli import make_climber_factory
from agents.collectors import process_cpu_seconds
from agents.config import parse_config
from agents.loop import AgentLoop
from agents.profile import ProfileError, interval
from agents.spool import Spool
from agents.targets.mariadb import MariaDBTarget
from agents.uploader import Uploader
from tests.fixtures.mariadb import MariaDBServer, SysbenchLoad, start_mariadb, stop_mariadb

SIZE = "thread_pool_size"
SAMPLE_S = 2.0

#: name -> (sysbench test, extra server options); point selects are autocommit
#: statements (no transactions), measured in queries/s.
WORKLOADS: dict[str, tuple[str, tuple[str, ...]]] = {
    "point_select": ("oltp_point_select", ()),
    "read_only": ("oltp_read_only", ()),
    "read_write": ("oltp_read_write", ()),
    "io_bound": (
        "oltp_read_write",
        (
            "--innodb-flush-log-at-trx-commit=1",
            "--log-bin=binlog",
            "--sync-binlog=1",
            "--innodb-buffer-pool-size=8M",
        ),
    ),
}


class Observer:
    """Transactions per second every ``SAMPLE_S`` seconds, from the server's counters."""

    def __init__(self, server: MariaDBServer, *, metric: str = "transactions") -> None:
        self.metric = metric
        settings = parse_config(
            {"target": {"host": server.host, "port": server.port, "user": server.user}},
            env={"POOLTUNE_DB_PASSWORD": server.password},
        ).target
        self.target = MariaDBTarget(settings, tuned_knobs=[SIZE])
        self.target.connect()
        self.target.check(read_only=True)
        self.load_pids: list[int] = []
        #: CPU cores used by other processes than the server and sysbench, per sample:
        #: the machine is shared, and samples taken while something else is busy lie.
        self.foreign_cores: list[float] = []
        self._last = self.target.read_counters()
        self._last_cpu = self._cpu_split()

    def _cpu_split(self) -> tuple[float, float]:
        """(all busy CPU seconds of the machine, CPU seconds of the load generators)."""
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
        ticks = os.sysconf("SC_CLK_TCK")
        busy = (user + nice + system + irq + softirq + steal) / ticks
        own = sum(process_cpu_seconds(pid) or 0.0 for pid in self.load_pids)
        return busy, own

    def sample(self) -> float:
        current = self.target.read_counters()
        previous, self._last = self._last, current
        cpu = self._cpu_split()
        (busy_before, own_before), self._last_cpu = self._last_cpu, cpu
        try:
            rates = interval(previous, current)
        except ProfileError:
            return 0.0
        server_cpu = 0.0
        if current.cpu_seconds is not None and previous.cpu_seconds is not None:
            server_cpu = current.cpu_seconds - previous.cpu_seconds
        foreign = (cpu[0] - busy_before) - (cpu[1] - own_before) - server_cpu
        self.foreign_cores.append(max(0.0, foreign) / rates.duration_s)
        return rates.qps if self.metric == "queries" else rates.tps

    def size(self) -> int:
        return self.target.current_tuple([SIZE])[SIZE]

    def hold(self, seconds: float) -> list[float]:
        samples: list[float] = []
        self.sample()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(SAMPLE_S)
            samples.append(self.sample())
        return samples


def sweep(
    observer: Observer, server: MariaDBServer, sizes: list[int], seconds: float, passes: int
) -> dict[int, float]:
    by_size: dict[int, list[float]] = {size: [] for size in sizes}
    order = list(sizes)
    for index in range(passes):
        for size in order if index % 2 == 0 else list(reversed(order)):
            server.sql(f"SET GLOBAL {SIZE} = {size}")
            samples = observer.hold(seconds)
            by_size[size].extend(samples[1:])  # the first sample mixes two sizes
    return {size: statistics.fmean(values) for size, values in by_size.items() if values}


@dataclass
class CaseResult:
    workload: str
    clients: int
    oracle_size: int
    oracle_tps: float
    default_tps: float
    final_tps: float
    final_size: int
    t95_s: float | None
    knob_changes: int
    worst_drop: float


def t95(series: list[float], target: float) -> float | None:
    for index in range(len(series)):
        window = series[index : index + 30]
        if window and sum(v >= 0.95 * target for v in window) >= 0.9 * len(window):
            return index * SAMPLE_S
    return None


def run_agent(
    server: MariaDBServer, observer: Observer, seconds: float, state_dir: Path
) -> tuple[list[float], int]:
    config = parse_config(
        {
            "agent": {
                "state_dir": str(state_dir),
                "sample_period_s": SAMPLE_S,
                "profile_window_s": 10.0,
                "climb_max_s": seconds,
                "log_level": "INFO",
            },
            "target": {"host": server.host, "port": server.port, "user": server.user},
            "climber": {"knobs": [SIZE]},
            "bounds": {SIZE: [1, 64]},
        },
        env={"POOLTUNE_DB_PASSWORD": server.password},
    )
    target = MariaDBTarget(config.target, tuned_knobs=[SIZE])
    loop = AgentLoop(
        config,
        target=target,
        climber_factory=make_climber_factory(config),
        uploader=Uploader(None, Spool(config.spool_dir)),
    )
    loop.start()
    thread = threading.Thread(target=loop.run, daemon=True)
    thread.start()
    series = observer.hold(seconds)
    loop.stop.set()
    thread.join(timeout=30)
    changes = loop.counters.knob_changes
    # Keep the agent's tuple in force for the final figure; shutdown would restore.
    loop.original.clear()
    loop.shutdown()
    return series, changes


def run_case(
    workload: str,
    clients: int,
    *,
    sizes: list[int],
    sweep_seconds: float,
    passes: int,
    agent_seconds: float,
    work_dir: Path,
) -> CaseResult:
    test, server_args = WORKLOADS[workload]
    server = start_mariadb(prefix=f"pooltune-bench-{workload}-", extra_args=server_args)
    load = SysbenchLoad(server, tables=4, table_size=20_000)
    try:
        load.prepare(test)
        sysbench_process = load.start(
            test,
            threads=clients,
            time_s=int(sweep_seconds * len(sizes) * passes + agent_seconds + 120),
        )
        metric = "queries" if workload == "point_select" else "transactions"
        observer = Observer(server, metric=metric)
        observer.load_pids = [sysbench_process.pid]
        time.sleep(5)  # warm-up
        oracle = sweep(observer, server, sizes, sweep_seconds, passes)
        default_size = os.cpu_count() or 1
        if default_size in oracle:
            default_tps = oracle[default_size]  # measured interleaved with the others
        else:
            server.sql(f"SET GLOBAL {SIZE} = {default_size}")
            default_tps = statistics.fmean(observer.hold(10.0)[1:])
        server.sql(f"SET GLOBAL {SIZE} = {default_size}")
        sweep_text = ", ".join(f"{size}: {tps:.0f}" for size, tps in oracle.items())
        foreign = statistics.fmean(observer.foreign_cores or [0.0])
        print(
            f"# {workload} x{clients}: sweep {{{sweep_text}}}, "
            f"other processes used {foreign:.2f} cores on average"
        )
        observer.foreign_cores.clear()
        series, changes = run_agent(server, observer, agent_seconds, work_dir / workload)
        print(
            f"# {workload} x{clients}: agent series "
            + " ".join(f"{v:.0f}" for v in series)
            + f"; other processes used {statistics.fmean(observer.foreign_cores or [0.0]):.2f}"
            " cores on average",
            flush=True,
        )
        final_size = observer.size()
        oracle_size = max(oracle, key=lambda size: oracle[size])
        tail = series[-int(60 / SAMPLE_S) :]
        start = statistics.fmean(series[:5]) if series else default_tps
        rolling = [statistics.fmean(series[i : i + 3]) for i in range(max(0, len(series) - 2))]
        return CaseResult(
            workload=workload,
            clients=clients,
            oracle_size=oracle_size,
            oracle_tps=oracle[oracle_size],
            default_tps=default_tps,
            final_tps=statistics.fmean(tail) if tail else 0.0,
            final_size=final_size,
            t95_s=t95(series, oracle[oracle_size]),
            knob_changes=changes,
            worst_drop=min(rolling) / start if rolling and start > 0 else 1.0,
        )
    finally:
        load.stop_all()
        stop_mariadb(server)


def print_table(results: list[CaseResult]) -> None:
    header = (
        f"{'workload':<13}{'clients':>8}{'oracle':>12}{'default':>9}{'final':>9}"
        f"{'/oracle':>9}{'/default':>9}{'T95 s':>8}{'changes':>9}{'worst':>7}"
    )
    print(header + "   (point_select in queries/s, the others in transactions/s)")
    print("-" * len(header))
    for r in results:
        t95_text = "-" if r.t95_s is None else f"{r.t95_s:.0f}"
        print(
            f"{r.workload:<13}{r.clients:>8}{r.oracle_tps:>8.0f}@{r.oracle_size:<3}"
            f"{r.default_tps:>9.0f}{r.final_tps:>6.0f}@{r.final_size:<2}"
            f"{r.final_tps / r.oracle_tps:>9.2f}{r.final_tps / r.default_tps:>9.2f}"
            f"{t95_text:>8}{r.knob_changes:>9}{r.worst_drop:>7.2f}"
        )


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # unwinds through run_case's cleanup (servers, sysbench)


def main() -> None:
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default="point_select,read_only,read_write,io_bound")
    parser.add_argument("--clients", default="16,64")
    parser.add_argument("--sizes", default="1,2,4,8,16,32")
    parser.add_argument("--sweep-seconds", type=float, default=12.0)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--agent-seconds", type=float, default=300.0)
    parser.add_argument("--quick", action="store_true", help="read_only at 16 clients, short")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/pooltune-bench"))
    args = parser.parse_args()
    if args.quick:
        args.workloads, args.clients, args.sizes = "read_only", "16", "1,2,4,8,16"
        args.sweep_seconds, args.agent_seconds = 8.0, 150.0
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    for workload in args.workloads.split(","):
        for clients in (int(c) for c in args.clients.split(",")):
            result = run_case(
                workload,
                clients,
                sizes=sizes,
                sweep_seconds=args.sweep_seconds,
                passes=args.passes,
                agent_seconds=args.agent_seconds,
                work_dir=args.work_dir,
            )
            results.append(result)
            print_table([result])
    print()
    print_table(results)


if __name__ == "__main__":
    main()
