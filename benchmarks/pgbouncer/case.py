"""One PgBouncer live case on a fresh lab: PostgreSQL, a PgBouncer in front of it and a
pgbench load, measured by :func:`benchmarks.live.case.measure_case` (the oracle sweep,
then the agent cold and, with a service, warm)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.config import AgentConfig, TargetSection
from agents.targets.pgbouncer import PgBouncerTarget
from benchmarks.live.agent_runs import agent_config
from benchmarks.live.case import CasePlan, case_key, measure_case
from benchmarks.live.observer import Observer
from benchmarks.live.scoring import LiveCaseScore
from benchmarks.pgbouncer.cases import BOUNDS, DEFAULT_SIZE, SCALE, SIZE, WORKLOADS
from benchmarks.pgbouncer.checkpoints import (
    CHECKPOINT_SETTINGS,
    read_checkpoints,
    record_checkpoints,
)
from lab.pgbench import Endpoint, Pgbench
from lab.pgbouncer import DatabaseEntry, PgBouncer, start_pgbouncer, stop_pgbouncer
from lab.postgres import start_postgres, stop_postgres


def run_case(workload: str, clients: int, plan: CasePlan, raw: dict[str, Any]) -> LiveCaseScore:
    """Start the lab, load it with ``workload`` at ``clients``, measure, stop the lab."""
    live = WORKLOADS[workload]
    cluster = start_postgres(prefix=f"pooltune-bench-pg-{workload}-", settings=CHECKPOINT_SETTINGS)
    bouncer: PgBouncer | None = None
    pgbench = Pgbench(cluster, scale=SCALE)
    try:
        pgbench.initialise()
        bouncer = start_pgbouncer(
            cluster, databases=(DatabaseEntry("bench"),), pool_mode=live.pool_mode
        )
        endpoint = Endpoint(bouncer.host, bouncer.port, "bench", cluster.role, cluster.password)
        time_s = int(plan.load_seconds() + 180)
        run = pgbench.start(endpoint, live.script, clients=clients, time_s=time_s)
        assert bouncer.pid is not None
        section = bouncer.target_section()
        observer = Observer(
            PgBouncerTarget(TargetSection.model_validate(section)),
            knob=SIZE,
            load_pids=(run.process.pid, bouncer.pid),
        )

        def config_for(_label: str, state_dir: Path) -> AgentConfig:
            return agent_config(
                section,
                knob=SIZE,
                bounds=BOUNDS,
                seconds=plan.agent_seconds,
                state_dir=state_dir,
                service=plan.warm,
            )

        try:
            score = measure_case(
                observer,
                plan,
                workload=workload,
                clients=clients,
                default_size=DEFAULT_SIZE,
                raw=raw,
                config_for=config_for,
            )
        finally:
            observer.close()
        checkpoints = read_checkpoints(cluster.log_file.read_text(errors="replace"))
        record_checkpoints(raw, case_key(workload, clients), checkpoints, f"{workload} x{clients}")
        return score
    finally:
        pgbench.close()
        if bouncer is not None:
            stop_pgbouncer(bouncer)
        stop_postgres(cluster)
