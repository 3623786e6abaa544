"""The agent on a live MariaDB under sysbench: oracle sweep vs. the agent from the default.

For each case (sysbench workload × client count) on a fresh pool-of-threads MariaDB:

1. Oracle: an exhaustive sweep of fixed ``thread_pool_size`` values, in interleaved
   passes (forward, then backward: A/B/…/B/A) because a single pass is dominated by
   drift; the first 2 s after each change are dropped. The oracle is the best mean.
2. The agent (in-process :class:`agents.loop.AgentLoop`, real climber, no service) starts
   from its local heuristic, cores × (1 + W/S) (what it does when the service cannot be
   reached), and runs for ``--agent-seconds``. An independent observer measures
   transactions/s every 2 s over the extra port.

3. Side by side: the agent's final size and the oracle size, alternated four times for
   ``--ab-seconds`` each (A/B/A/B), so that the final ratio is measured in one window
   instead of minutes apart (the machine drifts).

Printed per case: the sweep's gain of the best size over the default and its noise (two
standard errors of a size's mean, from the sample spread, inflated for autocorrelation);
whether the sweep differs from the default beyond that noise; the agent's final throughput
(mean of its last 60 s) / oracle and / default; the sweep's mean at the final size / oracle;
the side-by-side ratio final size / oracle size; the time to reach 95% of the oracle, scored
by the sweep's mean at the size in force (first moment after which its 10-s rolling mean
stays ≥ 95% for 90% of the next 60 s — or of the rest of the run, if shorter: raw samples
drift too much to tell); the number of knob changes; the worst 10-s mean / the first 10 s
(which includes the server's own drift: at a fixed size, 10-s means wander by ±20% on the
shared 2-core machine); the dip: the worst size the agent stayed at for 4 s or more, scored
by the sweep (its mean there / at the start size); and the verdict against the target
(≥ 0.95 of the oracle within 5 minutes where the sweep differs beyond the noise, never a
sustained drop below 0.85, judged on the dip). ``--json`` writes every sample, and
``--rescore`` prints the table of such a file again.

With ``--warm``, the same server then runs the agent a second time, warm: enrolled with the
real service (uvicorn on a fresh PostgreSQL database), whose promoted model the real trainer
CLI learned from sim-v1 (what ``make run`` bundles) and the real dataset without any case of
the workload's group, so the model never saw this workload; the server times its
synchronisation waits (performance_schema) for both runs. The cold run is then cold as in
``benchmarks/warm_start.py``: enrolled with the same service but starting from the tuple in
force (the default), not from the local heuristic. Every agent run measures latency
(``enable_latency``: the query_response_time plugin), which gives the profile its wait W.
Printed: cold vs warm start size and source, the sweep's mean at the start / the oracle, T95,
the final size by the sweep and side by side.

Usage::

    python -m benchmarks.mariadb_live                       # 3 workloads x 2 (about 1 h)
    python -m benchmarks.mariadb_live --quick               # one small case (about 5 min)
    python -m benchmarks.mariadb_live --workloads read_only --clients 32 --agent-seconds 300
    python -m benchmarks.mariadb_live --workloads io_bound --clients 64 --warm   # about 15 min
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import signal
import statistics
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.cli import make_climber_factory
from agents.collectors import process_cpu_seconds
from agents.config import parse_config
from agents.loop import AgentLoop
from agents.profile import ProfileError, interval
from agents.spool import Spool
from agents.targets.mariadb import MariaDBTarget
from agents.uploader import Uploader
from tests.fixtures.mariadb import (
    SYNC_TIMING_ARGS,
    MariaDBServer,
    SysbenchLoad,
    start_mariadb,
    stop_mariadb,
)

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

    def hold(self, seconds: float, sizes: list[int] | None = None) -> list[float]:
        """Samples for ``seconds``; with ``sizes``, the pool size in force at each one too."""
        samples: list[float] = []
        self.sample()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(SAMPLE_S)
            samples.append(self.sample())
            if sizes is not None:
                sizes.append(self.size())
        return samples


#: Samples at a fixed size are autocorrelated (drift, background flushes): their standard
#: error is wider than stdev/sqrt(n) by about this much (seen on this machine's sweeps).
AUTOCORRELATION_INFLATION = 1.5
#: Samples in the rolling mean used for T95 and for the sustained-drop check (10 s).
ROLLING = 5
TARGET_SHARE, TARGET_S, TARGET_FLOOR = 0.95, 300.0, 0.85


def sweep(
    observer: Observer, server: MariaDBServer, sizes: list[int], seconds: float, passes: int
) -> dict[int, list[float]]:
    """Samples per size, in interleaved passes; the first sample after a change is dropped."""
    by_size: dict[int, list[float]] = {size: [] for size in sizes}
    order = list(sizes)
    for index in range(passes):
        for size in order if index % 2 == 0 else list(reversed(order)):
            server.sql(f"SET GLOBAL {SIZE} = {size}")
            samples = observer.hold(seconds)
            by_size[size].extend(samples[1:])  # the first sample mixes two sizes
    return {size: values for size, values in by_size.items() if values}


def relative_se(values: list[float]) -> float:
    """Standard error of the mean of ``values``, relative to the mean (autocorrelation-inflated)."""
    if len(values) < 2 or statistics.fmean(values) <= 0:
        return float("inf")
    spread = statistics.stdev(values) / statistics.fmean(values)
    return AUTOCORRELATION_INFLATION * spread / math.sqrt(len(values))


def sweep_summary(samples: dict[int, list[float]]) -> tuple[dict[int, float], float]:
    """Mean throughput per size, and the sweep's noise: two standard errors of a size's mean
    (relative, the median over sizes)."""
    oracle = {size: statistics.fmean(values) for size, values in samples.items()}
    return oracle, 2 * statistics.median(relative_se(values) for values in samples.values())


def side_by_side(
    observer: Observer, server: MariaDBServer, first: int, second: int, seconds: float
) -> tuple[float, float]:
    """Mean throughput at two sizes, alternated A/B/A/B (first sample after a change dropped)."""
    means: dict[int, list[float]] = {first: [], second: []}
    for size in (first, second, first, second):
        server.sql(f"SET GLOBAL {SIZE} = {size}")
        means[size].extend(observer.hold(seconds)[1:])
    return statistics.fmean(means[first]), statistics.fmean(means[second])


@dataclass
class CaseResult:
    workload: str
    clients: int
    oracle_size: int
    oracle_tps: float
    default_size: int
    default_tps: float
    #: Two standard errors of one size's mean in the sweep, relative (the median over sizes).
    noise: float
    final_tps: float
    final_size: int
    #: Final size / oracle size, measured side by side after the run.
    ab_ratio: float
    #: The sweep's mean at the final size / the oracle.
    sweep_final: float
    t95_s: float | None
    knob_changes: int
    #: Worst 10-s mean / the first 10 s of the agent's run (includes the server's drift).
    worst_drop: float
    #: The worst size the agent stayed at, by the sweep: its mean there / at the start size.
    dip: float = 1.0

    @property
    def gain(self) -> float:
        return self.oracle_tps / self.default_tps - 1.0

    @property
    def differs(self) -> bool:
        """The sweep's best beats the default by more than the noise (of both means)."""
        return self.gain > self.noise * 2**0.5

    @property
    def verdict(self) -> str:
        if self.dip < TARGET_FLOOR:
            return "DROP"
        if not self.differs:
            return "flat"
        return "met" if self.t95_s is not None and self.t95_s <= TARGET_S else "MISSED"


def rolling(series: list[float], width: int = ROLLING) -> list[float]:
    return [statistics.fmean(series[i : i + width]) for i in range(len(series) - width + 1)]


def t95(series: list[float], target: float) -> float | None:
    """First time after which the 10-s rolling mean of ``series`` stays ≥ 95% of
    ``target`` for 90% of the next 60 s (or of the rest of the run)."""
    smooth = rolling(series)
    horizon = int(60 / SAMPLE_S)
    for index in range(len(smooth)):
        window = smooth[index : index + horizon]
        if window and sum(v >= TARGET_SHARE * target for v in window) >= 0.9 * len(window):
            return index * SAMPLE_S
    return None


def sweep_at(oracle: dict[int, float], size: int) -> float:
    """The sweep's mean throughput at ``size``, log-linear between measured sizes."""
    points = sorted(oracle)
    return float(
        np.interp(
            math.log(max(size, 1)), [math.log(p) for p in points], [oracle[p] for p in points]
        )
    )


def dip(sizes: list[int], oracle: dict[int, float], start_size: int) -> float:
    """The worst size the agent stayed at (≥ 2 samples, 4 s, after the one that mixes two
    sizes), scored by the interleaved sweep's mean there / at the start size: what the
    agent's choice cost, free of the server's drift, which a ratio of raw samples is not."""
    reference = sweep_at(oracle, start_size)
    worst = 1.0
    start = 0
    for index in range(1, len(sizes) + 1):
        if index < len(sizes) and sizes[index] == sizes[start]:
            continue
        if index - start - 1 >= 2 and reference > 0:
            worst = min(worst, sweep_at(oracle, sizes[start]) / reference)
        start = index
    return worst


def score_case(workload: str, clients: int, case: dict[str, Any]) -> CaseResult:
    """A case's figures from its raw samples (what ``--json`` writes)."""
    oracle, noise = sweep_summary({int(size): values for size, values in case["sweep"].items()})
    oracle_size = max(oracle, key=lambda size: oracle[size])
    series: list[float] = case["agent"]
    sizes: list[int] = case["agent_sizes"]
    default_size = int(case.get("default_size", 2))
    tail = series[-int(60 / SAMPLE_S) :]
    start = statistics.fmean(series[:ROLLING]) if series else 0.0
    smooth = rolling(series)
    return CaseResult(
        workload=workload,
        clients=clients,
        oracle_size=oracle_size,
        oracle_tps=oracle[oracle_size],
        default_size=default_size,
        default_tps=float(case.get("default_tps", oracle.get(default_size, math.nan))),
        noise=noise,
        final_tps=statistics.fmean(tail) if tail else 0.0,
        final_size=int(case["final_size"]),
        ab_ratio=float(case["ab_ratio"]),
        sweep_final=sweep_at(oracle, int(case["final_size"])) / oracle[oracle_size],
        # Scored by the sweep at the size in force: the server's drift moves raw samples
        # by ±20% over minutes, which would make or break 95% on its own.
        t95_s=t95([sweep_at(oracle, size) for size in sizes], oracle[oracle_size]),
        knob_changes=int(
            case.get("knob_changes", sum(a != b for a, b in zip(sizes, sizes[1:], strict=False)))
        ),
        worst_drop=min(smooth) / start if smooth and start > 0 else 1.0,
        dip=dip(sizes, oracle, sizes[0] if sizes else default_size),
    )


@dataclass(frozen=True)
class AgentRun:
    series: list[float]
    sizes: list[int]
    knob_changes: int
    #: The size the climb started from and where it came from (heuristic, model, …).
    start_size: int
    start_source: str


@dataclass(frozen=True)
class WarmService:
    """A running pooltune service the warm agent enrols with and asks for its start."""

    url: str
    enrollment_token: str
    #: What the promoted model learned from (printed with the results).
    description: str


def run_agent(
    server: MariaDBServer,
    observer: Observer,
    seconds: float,
    state_dir: Path,
    *,
    service: WarmService | None = None,
    cold: bool = False,
) -> AgentRun:
    """The agent for ``seconds``: with ``service``, enrolled there and starting from its
    recommendation, or from the tuple in force when ``cold`` (it only uploads); without,
    from the local heuristic (no service)."""
    from agents.uploader import ServiceClient, make_http_client
    from benchmarks.fleet import ColdStartClient

    config = parse_config(
        {
            "agent": {
                "state_dir": str(state_dir),
                "sample_period_s": SAMPLE_S,
                "profile_window_s": 10.0,
                "climb_max_s": seconds,
                "log_level": "INFO",
            },
            # Latency (query_response_time) gives the profile its off-CPU wait W.
            "target": {
                "host": server.host,
                "port": server.port,
                "user": server.user,
                "enable_latency": True,
            },
            "climber": {"knobs": [SIZE]},
            "bounds": {SIZE: [1, 64]},
        }
        | ({"service": {"url": service.url, "timeout_s": 30.0}} if service else {}),
        env={"POOLTUNE_DB_PASSWORD": server.password},
    )
    target = MariaDBTarget(config.target, tuned_knobs=[SIZE])
    client = None
    if service is not None:
        http = make_http_client(service.url, timeout_s=30.0)
        target.connect()
        credentials = ServiceClient(http, max_attempts=3).enroll(
            service.enrollment_token, target.host_facts()
        )
        client_type = ColdStartClient if cold else ServiceClient
        client = client_type(http, token=credentials.agent_token, max_attempts=3)
    loop = AgentLoop(
        config,
        target=target,
        climber_factory=make_climber_factory(config),
        uploader=Uploader(client, Spool(config.spool_dir)),
    )
    loop.start()
    thread = threading.Thread(target=loop.run, daemon=True)
    thread.start()
    sizes: list[int] = []
    series = observer.hold(seconds, sizes)
    loop.stop.set()
    thread.join(timeout=30)
    changes = loop.counters.knob_changes
    climb = loop.climb
    start_size = climb.start_tuple[SIZE] if climb is not None else (sizes[0] if sizes else 0)
    source = climb.source.value if climb is not None else "none"
    # Keep the agent's tuple in force for the final figure; shutdown would restore.
    loop.original.clear()
    loop.shutdown()
    return AgentRun(series, sizes, changes, start_size, source)


def run_case(
    workload: str,
    clients: int,
    *,
    sizes: list[int],
    sweep_seconds: float,
    passes: int,
    agent_seconds: float,
    ab_seconds: float,
    work_dir: Path,
    raw: dict[str, Any],
    warm: WarmService | None = None,
    warm_first: bool = False,
) -> CaseResult:
    test, server_args = WORKLOADS[workload]
    if warm is not None:  # the warm agent measures contention too (see agents/packaging)
        server_args = SYNC_TIMING_ARGS + server_args
    server = start_mariadb(prefix=f"pooltune-bench-{workload}-", extra_args=server_args)
    load = SysbenchLoad(server, tables=4, table_size=20_000)
    try:
        load.prepare(test)
        sysbench_process = load.start(
            test,
            threads=clients,
            time_s=int(
                sweep_seconds * len(sizes) * passes
                + (agent_seconds + 4 * ab_seconds) * (2 if warm is not None else 1)
                + 120
            ),
        )
        metric = "queries" if workload == "point_select" else "transactions"
        observer = Observer(server, metric=metric)
        observer.load_pids = [sysbench_process.pid]
        time.sleep(5)  # warm-up
        samples = sweep(observer, server, sizes, sweep_seconds, passes)
        oracle, noise = sweep_summary(samples)
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
            f"# {workload} x{clients}: sweep {{{sweep_text}}} (noise ±{noise:.1%}), "
            f"other processes used {foreign:.2f} cores on average",
            flush=True,
        )
        oracle_size = max(oracle, key=lambda size: oracle[size])

        def agent_case(label: str) -> dict[str, Any]:
            observer.foreign_cores.clear()
            # With a service, both runs enrol there; the cold one starts from the tuple in
            # force. Without one, the agent starts from its local heuristic.
            run = run_agent(
                server,
                observer,
                agent_seconds,
                work_dir / f"{workload}-{label}",
                service=warm,
                cold=label == "cold" and warm is not None,
            )
            agent_foreign = statistics.fmean(observer.foreign_cores or [0.0])
            print(
                f"# {workload} x{clients} {label}: start {run.start_size} ({run.start_source}); "
                "agent series "
                + " ".join(f"{v:.0f}@{n}" for v, n in zip(run.series, run.sizes, strict=True))
                + f"; other processes used {agent_foreign:.2f} cores on average",
                flush=True,
            )
            final_size = observer.size()
            if final_size == oracle_size:
                ab_ratio = 1.0
            else:
                at_final, at_oracle = side_by_side(
                    observer, server, final_size, oracle_size, ab_seconds
                )
                ab_ratio = at_final / at_oracle
            return {
                "sweep": {str(size): values for size, values in samples.items()},
                "default_size": default_size,
                "default_tps": default_tps,
                "agent": run.series,
                "agent_sizes": run.sizes,
                "start_size": run.start_size,
                "start_source": run.start_source,
                "final_size": final_size,
                "ab_ratio": ab_ratio,
                "knob_changes": run.knob_changes,
                "foreign_cores": {"sweep": foreign, "agent": agent_foreign},
            }

        labels = ["cold"]
        if warm is not None:
            # The server drifts over a run (io_bound stalls grow): --warm-first swaps the order.
            labels = ["warm", "cold"] if warm_first else ["cold", "warm"]
        for index, label in enumerate(labels):
            if index:
                server.sql(f"SET GLOBAL {SIZE} = {default_size}")
                time.sleep(10)  # back to the default's steady state before the next agent
            key = f"{workload}x{clients}" + ("-warm" if label == "warm" else "")
            raw[key] = agent_case(label)
        return score_case(workload, clients, raw[f"{workload}x{clients}"])
    finally:
        load.stop_all()
        stop_mariadb(server)


def print_table(results: list[CaseResult]) -> None:
    header = (
        f"{'workload':<13}{'clients':>8}{'oracle':>12}{'default':>11}{'gain':>7}{'noise':>7}"
        f"{'final':>11}{'/oracle':>9}{'/default':>9}{'sweep':>7}{'A/B':>6}{'T95 s':>7}"
        f"{'changes':>8}{'worst':>7}{'dip':>6}  verdict"
    )
    print(header + "   (point_select in queries/s, the others in transactions/s)")
    print("-" * len(header))
    for r in results:
        t95_text = "-" if r.t95_s is None else f"{r.t95_s:.0f}"
        print(
            f"{r.workload:<13}{r.clients:>8}{r.oracle_tps:>8.0f}@{r.oracle_size:<3}"
            f"{r.default_tps:>8.0f}@{r.default_size:<2}{r.gain:>+7.0%}{r.noise:>7.1%}"
            f"{r.final_tps:>8.0f}@{r.final_size:<2}"
            f"{r.final_tps / r.oracle_tps:>9.2f}{r.final_tps / r.default_tps:>9.2f}"
            f"{r.sweep_final:>7.2f}{r.ab_ratio:>6.2f}{t95_text:>7}{r.knob_changes:>8}{r.worst_drop:>7.2f}{r.dip:>6.2f}"
            f"  {r.verdict}"
        )


VERDICTS = (
    "verdict: met / MISSED = reached 95% of the oracle within 5 min or not, where the sweep"
    " differs beyond its noise; flat = it does not; DROP = the agent stayed 4 s or more at a"
    " size the sweep puts below 0.85 of the start size (dip). worst = worst 10-s mean / the"
    " first 10 s, which includes the server's own drift."
)


#: Simulated workloads (of sim-v1) the warm model learns from besides the real cases.
WARM_SIM_WORKLOADS = 3000

#: The real dataset's workload group of each live workload (held out of the warm model).
DATASET_GROUPS = {
    "point_select": "oltp_point_select",
    "read_only": "oltp_read_only",
    "read_write": "oltp_read_write",
    "io_bound": "io_bound_read_write",
}


@contextlib.contextmanager
def warm_service(
    workload: str,
    *,
    real_dataset: str,
    sim_workloads: int,
    trials: int,
    work_dir: Path,
    agents: int = 1,
) -> Iterator[WarmService]:
    """The real service on a fresh PostgreSQL database, with a model promoted by the real
    trainer CLI from what ``make run`` bundles (``sim_workloads`` of sim-v1) plus the real
    dataset without any case of ``workload``'s group: the warm agent's host is one the
    model has never seen."""
    from benchmarks import fleet
    from trainer import datasets

    held = DATASET_GROUPS[workload]
    real = datasets.load_dataset(real_dataset)
    kept = real.workloads[real.workloads["group"] != held]
    held_out = work_dir / f"{real_dataset}-without-{held}"
    datasets.write_dataset(
        held_out,
        name=held_out.name,
        workloads=kept,
        curves=real.curves[real.curves["workload_id"].isin(set(kept["workload_id"]))],
        command=f"{real_dataset} without the {held} cases (benchmarks/mariadb_live.py --warm)",
        description={"source": real_dataset, "held_out_group": held},
    )
    with fleet.live_service(log_path=work_dir / "service.log") as service:
        fleet.import_dataset(service, "sim-v1", limit=sim_workloads)
        fleet.import_dataset(service, str(held_out))
        training = fleet.train_and_promote(
            service, trials=trials, seed=0, card_dir=work_dir / "cards", name="warm-live"
        )
        promoted = "promoted" if training.promoted else "NOT promoted (the service's heuristic)"
        description = (
            f"model from {sim_workloads} sim-v1 workloads + {len(kept)} {real_dataset} cases "
            f"without {held} ({trials} trials, {training.seconds:.0f} s): {promoted}"
        )
        print(f"# warm service: {description}", flush=True)
        yield WarmService(
            url=service.url,
            enrollment_token=service.enrollment_token(uses=agents, description="mariadb_live"),
            description=description,
        )


def print_warm_comparison(key: str, cold: dict[str, Any], warm: dict[str, Any]) -> None:
    """Cold vs warm on the same server and sweep: the start's throughput by the sweep, T95,
    the final size by the sweep and side by side, the knob changes."""
    workload, _, clients = key.rpartition("x")
    oracle, _ = sweep_summary({int(size): values for size, values in cold["sweep"].items()})
    best = max(oracle.values())
    print(
        f"{'run':<5} {'start':>6} {'source':>17} {'start/oracle':>12} {'T95 s':>6} "
        f"{'final':>6} {'sweep@final':>11} {'A/B':>5} {'changes':>7}"
    )
    for label, case in (("cold", cold), ("warm", warm)):
        result = score_case(workload, int(clients), case)
        start = int(case.get("start_size", case["default_size"]))
        t95_text = "-" if result.t95_s is None else f"{result.t95_s:.0f}"
        print(
            f"{label:<5} {start:>6} {case.get('start_source', '?'):>17} "
            f"{sweep_at(oracle, start) / best:>12.2f} {t95_text:>6} {result.final_size:>6} "
            f"{result.sweep_final:>11.2f} {result.ab_ratio:>5.2f} {result.knob_changes:>7}"
        )


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # unwinds through run_case's cleanup (servers, sysbench)


def main() -> None:
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workloads",
        default="read_only,read_write,io_bound",
        help=f"comma-separated, of {', '.join(WORKLOADS)} (point_select: too noisy on 2 cores)",
    )
    parser.add_argument("--clients", default="16,64")
    parser.add_argument("--sizes", default="1,2,4,8,16,32")
    parser.add_argument("--sweep-seconds", type=float, default=12.0)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--agent-seconds", type=float, default=300.0)
    parser.add_argument(
        "--ab-seconds", type=float, default=12.0, help="per leg of the final side-by-side check"
    )
    parser.add_argument("--quick", action="store_true", help="read_only at 16 clients, short")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/pooltune-bench"))
    parser.add_argument("--json", type=Path, default=None, help="write every sample here")
    parser.add_argument(
        "--rescore", type=Path, default=None, help="print the table of a --json file; run nothing"
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="after the cold agent, run it again from the real service's recommendation: a "
        "model trained on sim-v1 and the real dataset without the workload (needs PostgreSQL)",
    )
    parser.add_argument(
        "--warm-first", action="store_true", help="run the warm agent before the cold one"
    )
    parser.add_argument("--warm-dataset", default="mariadb-2core-v1")
    parser.add_argument("--warm-sim-workloads", type=int, default=WARM_SIM_WORKLOADS)
    parser.add_argument("--warm-trials", type=int, default=5)
    args = parser.parse_args()
    if args.rescore:
        recorded = json.loads(args.rescore.read_text())
        cold_cases = {k: v for k, v in recorded.items() if not k.endswith("-warm")}
        print_table(
            [
                score_case(key.rpartition("x")[0], int(key.rpartition("x")[2]), case)
                for key, case in cold_cases.items()
            ]
        )
        print(VERDICTS)
        for key, case in cold_cases.items():
            if f"{key}-warm" in recorded:
                print(f"\n{key}: cold vs warm")
                print_warm_comparison(key, case, recorded[f"{key}-warm"])
        return
    if args.quick:
        args.workloads, args.clients, args.sizes = "read_only", "16", "1,2,4,8,16"
        args.sweep_seconds, args.agent_seconds = 8.0, 150.0
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    raw: dict[str, Any] = {}
    client_counts = [int(c) for c in args.clients.split(",")]
    for workload in args.workloads.split(","):
        with contextlib.ExitStack() as stack:
            warm = None
            if args.warm:
                warm = stack.enter_context(
                    warm_service(
                        workload,
                        real_dataset=args.warm_dataset,
                        sim_workloads=args.warm_sim_workloads,
                        trials=args.warm_trials,
                        work_dir=args.work_dir / f"warm-{workload}",
                        agents=2 * len(client_counts),  # a cold and a warm agent each
                    )
                )
            for clients in client_counts:
                result = run_case(
                    workload,
                    clients,
                    sizes=sizes,
                    sweep_seconds=args.sweep_seconds,
                    passes=args.passes,
                    agent_seconds=args.agent_seconds,
                    ab_seconds=args.ab_seconds,
                    work_dir=args.work_dir,
                    raw=raw,
                    warm=warm,
                    warm_first=args.warm_first,
                )
                results.append(result)
                print_table([result])
                key = f"{workload}x{clients}"
                if f"{key}-warm" in raw:
                    print_warm_comparison(key, raw[key], raw[f"{key}-warm"])
                if args.json:
                    args.json.write_text(json.dumps(raw, indent=1))
    print()
    print_table(results)
    print(VERDICTS)


if __name__ == "__main__":
    main()
