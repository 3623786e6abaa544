"""One live case: the oracle sweep, the agent (cold, and warm with a service), and the
agent's final size side by side with the oracle's. :func:`measure_case` does it on any
engine's :class:`Observer`; :func:`run_case` is MariaDB's (a fresh server under sysbench)."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.config import AgentConfig, TargetSection
from agents.sweep import best_value
from agents.targets.mariadb import MariaDBTarget
from benchmarks.live.agent_runs import agent_config, run_agent
from benchmarks.live.cases import SIZE, WORKLOADS
from benchmarks.live.observer import Observer
from benchmarks.live.oracle import measured_points, side_by_side, sweep_sizes
from benchmarks.live.scoring import (
    LiveCaseScore,
    safety,
    score_case,
    sweep_noise,
    sweep_points,
)
from benchmarks.live.warm import WarmService
from lab.mariadb import SYNC_TIMING_ARGS, running_mariadb
from lab.sysbench import SysbenchLoad

#: Seconds of load before the first measurement.
WARM_UP_S = 5.0
#: Seconds at the default size before the next agent starts.
SETTLE_S = 10.0
#: Seconds at the default size when the sweep's grid does not have it.
DEFAULT_DWELL_S = 10.0

#: The agent's configuration for a run: (its label, its state directory) → config.
AgentConfigFor = Callable[[str, Path], AgentConfig]


@dataclass(frozen=True)
class CasePlan:
    """How a live case is measured, whatever the engine: the sweep's sizes and timing, the
    agent's run, the side-by-side check, where the state goes, and the warm service."""

    sizes: Sequence[int]
    sweep_seconds: float
    passes: int
    agent_seconds: float
    ab_seconds: float
    work_dir: Path
    warm: WarmService | None = None
    warm_first: bool = False
    #: With a warm service: cold and warm runs each, in pairs whose order alternates.
    repeats: int = 1
    #: Before the first agent run, hold the default size as long as an agent runs, with no
    #: agent: the server's own drift, scored as the agent's safety is.
    control: bool = False

    def runs(self) -> list[tuple[str, int]]:
        """The agent runs in order, as (``cold`` or ``warm``, repeat index): one cold run
        alone, else ``repeats`` pairs alternating cold-warm and warm-cold (``warm_first``
        swaps them), so the server's drift over the case favours neither arm."""
        if self.warm is None:
            return [("cold", 0)]
        order: list[tuple[str, int]] = []
        for index in range(self.repeats):
            pair = ["cold", "warm"] if (index % 2 == 0) != self.warm_first else ["warm", "cold"]
            order += [(label, index) for label in pair]
        return order

    def load_seconds(self) -> float:
        """How long the load must last: the sweep, then each agent run and its check."""
        sweep_s = self.sweep_seconds * len(self.sizes) * self.passes
        control_s = self.agent_seconds + SETTLE_S if self.control else 0.0
        runs_s = (self.agent_seconds + 4 * self.ab_seconds + SETTLE_S) * len(self.runs())
        return sweep_s + control_s + runs_s


def case_key(workload: str, clients: int, *, warm: bool = False, repeat: int = 0) -> str:
    """The case's key in ``--json`` files: ``read_onlyx16`` (``-warm`` for a warm run,
    ``-2``, ``-3`` … for the repeats after the first)."""
    suffix = f"-{repeat + 1}" if repeat else ""
    return f"{workload}x{clients}" + ("-warm" if warm else "") + suffix


def recorded_runs(raw: Mapping[str, Any], key: str, *, warm: bool) -> list[Mapping[str, Any]]:
    """The recorded runs of one arm of case ``key`` (as :func:`case_key` names it), in
    order."""
    first = key + ("-warm" if warm else "")
    runs = [raw[first]] if first in raw else []
    while f"{first}-{len(runs) + 1}" in raw:
        runs.append(raw[f"{first}-{len(runs) + 1}"])
    return runs


def measure_oracle(
    observer: Observer,
    sizes: list[int],
    *,
    default_size: int,
    dwell_s: float,
    repeats: int,
    state_dir: Path,
    label: str,
) -> dict[str, Any]:
    """The sweep's samples per size and the default size's throughput, as ``--json``
    records them; the default size is in force afterwards."""
    sweep = sweep_sizes(observer, sizes, dwell_s=dwell_s, repeats=repeats, state_dir=state_dir)
    points = measured_points(sweep)
    recorded: dict[str, Any] = {
        "sweep": {str(size): list(point.samples) for size, point in points.items()},
        "default_size": default_size,
    }
    if default_size in points:  # measured interleaved with the others
        recorded["default_tps"] = points[default_size].mean
    else:
        alone = sweep_sizes(
            observer, [default_size], dwell_s=DEFAULT_DWELL_S, repeats=1, state_dir=state_dir
        )
        recorded["default_samples"] = list(alone.point(default_size).samples)
        recorded["default_tps"] = statistics.fmean(recorded["default_samples"])
    recorded["foreign_cores"] = {"sweep": sweep.other_cpu or 0.0}
    observer.set_size(default_size)
    sweep_text = ", ".join(f"{size}: {point.mean:.0f}" for size, point in points.items())
    print(
        f"# {label}: sweep {{{sweep_text}}} (noise ±{sweep_noise(points):.1%}), other "
        f"processes used {sweep.other_cpu or 0.0:.2f} cores on average",
        flush=True,
    )
    return recorded


def measure_control(observer: Observer, *, seconds: float, label: str) -> dict[str, Any]:
    """The server alone at the size in force (the default) for ``seconds``: what it does
    with no agent, as the control of the agent's safety (:func:`scoring.safety`), with the
    time each sample ended, as ``--json`` records them."""
    time.sleep(SETTLE_S)
    times: list[float] = []
    series = observer.hold(seconds, times=times)
    print(
        f"# {label}: control (no agent, size {observer.size()}) "
        + " ".join(f"{v:.0f}" for v in series)
        + f"; safety {safety(series):.2f}",
        flush=True,
    )
    return {"control": series, "control_times": times}


def measure_agent(
    observer: Observer,
    config: AgentConfig,
    *,
    label: str,
    oracle_size: int,
    agent_seconds: float,
    ab_seconds: float,
    sweep_dir: Path,
    warm: WarmService | None,
    cold: bool,
) -> dict[str, Any]:
    """One agent run and its final size side by side with the oracle's, as ``--json``
    records them."""
    observer.foreign_cores.clear()
    run = run_agent(config, observer, agent_seconds, service=warm, cold=cold)
    agent_foreign = statistics.fmean(observer.foreign_cores or [0.0])
    print(
        f"# {label}: start {run.start_size} ({run.start_source}); agent series "
        + " ".join(f"{v:.0f}@{n}" for v, n in zip(run.series, run.sizes, strict=True))
        + f"; other processes used {agent_foreign:.2f} cores on average",
        flush=True,
    )
    print(f"# {label}: climber events " + " | ".join(run.events), flush=True)
    final_size = observer.size()
    ab_ratio = 1.0
    if final_size != oracle_size:
        ab_ratio = side_by_side(
            observer, final_size, oracle_size, dwell_s=ab_seconds, state_dir=sweep_dir
        )
    return {
        "agent": run.series,
        "agent_sizes": run.sizes,
        "agent_times": run.times,
        "start_size": run.start_size,
        "start_source": run.start_source,
        "final_size": final_size,
        "ab_ratio": ab_ratio,
        "knob_changes": run.knob_changes,
        "climber_events": run.events,
        "climber_inputs": run.climber_inputs,
        "foreign_cores": {"agent": agent_foreign},
    }


def measure_case(
    observer: Observer,
    plan: CasePlan,
    *,
    workload: str,
    clients: int,
    default_size: int,
    raw: dict[str, Any],
    config_for: AgentConfigFor,
) -> LiveCaseScore:
    """On a loaded server: the oracle sweep, then the agent run(s) of ``config_for``; record
    the raw samples in ``raw`` (under :func:`case_key`) and score the first cold run. With
    a warm service the cold runs enrol too (they start from the tuple in force) and the
    warm runs start from the service's recommendation (:meth:`CasePlan.runs`: their order)."""
    warm, work_dir = plan.warm, plan.work_dir
    sweep_dir = work_dir / f"{case_key(workload, clients)}-sweep"
    time.sleep(WARM_UP_S)
    oracle = measure_oracle(
        observer,
        list(plan.sizes),
        default_size=default_size,
        dwell_s=plan.sweep_seconds,
        repeats=plan.passes,
        state_dir=sweep_dir,
        label=f"{workload} x{clients}",
    )
    oracle_size = best_value(list(sweep_points(oracle["sweep"]).values()))
    assert oracle_size is not None, "the sweep kept no sample"
    if plan.control:
        oracle |= measure_control(
            observer, seconds=plan.agent_seconds, label=f"{workload} x{clients}"
        )
    for index, (label, repeat) in enumerate(plan.runs()):
        if index:
            observer.set_size(oracle["default_size"])
            time.sleep(SETTLE_S)  # the default's steady state before the next agent
        name = label + (f"-{repeat + 1}" if repeat else "")
        run = measure_agent(
            observer,
            config_for(label, work_dir / f"{workload}x{clients}-{name}"),
            label=f"{workload} x{clients} {name}",
            oracle_size=oracle_size,
            agent_seconds=plan.agent_seconds,
            ab_seconds=plan.ab_seconds,
            sweep_dir=sweep_dir,
            warm=warm,
            cold=label == "cold" and warm is not None,
        )
        foreign = oracle["foreign_cores"] | run["foreign_cores"]
        key = case_key(workload, clients, warm=label == "warm", repeat=repeat)
        raw[key] = oracle | run | {"foreign_cores": foreign}
    return score_case(workload, clients, raw[case_key(workload, clients)])


def run_case(
    workload: str,
    clients: int,
    plan: CasePlan,
    raw: dict[str, Any],
    *,
    sync_timing: bool = False,
) -> LiveCaseScore:
    """A MariaDB case on a fresh server under sysbench (:func:`measure_case`). With a warm
    service, or ``sync_timing``, the server times its synchronisation waits (as
    agents/packaging recommends, and as the datasets' servers do); without a warm service
    the agent starts from its local heuristic."""
    spec = WORKLOADS[workload]
    test, server_args = spec.test, spec.server_args
    if plan.warm is not None or sync_timing:
        server_args = SYNC_TIMING_ARGS + server_args
    with running_mariadb(prefix=f"pooltune-bench-{workload}-", extra_args=server_args) as server:
        tables, rows = spec.tables
        load = SysbenchLoad(server, tables=tables, table_size=rows)
        load.prepare(test)
        time_s = int(plan.load_seconds() + 120)
        with load.running(
            test, threads=clients, time_s=time_s, extra_args=spec.extra_args
        ) as sysbench:
            settings = TargetSection.model_validate(server.target_section())
            observer = Observer(
                MariaDBTarget(settings, tuned_knobs=[SIZE]),
                knob=SIZE,
                metric=spec.metric,
                load_pids=(sysbench.pid,),
            )

            def config_for(_label: str, state_dir: Path) -> AgentConfig:
                # Latency (query_response_time) gives the profile its off-CPU wait W.
                return agent_config(
                    server.target_section(enable_latency=True),
                    knob=SIZE,
                    bounds=(1, 64),
                    seconds=plan.agent_seconds,
                    state_dir=state_dir,
                    service=plan.warm,
                )

            try:
                return measure_case(
                    observer,
                    plan,
                    workload=workload,
                    clients=clients,
                    default_size=os.cpu_count() or 1,  # MariaDB's default thread_pool_size
                    raw=raw,
                    config_for=config_for,
                )
            finally:
                observer.close()
